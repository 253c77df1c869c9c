"""The web inbox: the page at ``/`` where people answer pending questions (spec W1–W4a).

The page is plain HTML, CSS and JavaScript modules shipped as package data and served by
Clarion itself; it talks only to Clarion's REST surface and event stream.
"""

from clarion.adapters.web.routes import STATIC_PATH, web_routes

__all__ = ["STATIC_PATH", "web_routes"]
