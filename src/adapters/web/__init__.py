"""The web inbox: the page at ``/`` where people answer pending questions (spec W1–W4a).

The page is plain HTML, CSS and JavaScript modules shipped as package data and served by
Clarion itself; it talks only to Clarion's REST surface and event stream. The answer-link page
(``/answer/<token>``, :mod:`clarion.adapters.web.answer`) is server-rendered HTML instead,
working without JavaScript, for the signed single-use links e-mail carries.
"""

from clarion.adapters.web.routes import STATIC_PATH, web_routes

__all__ = ["STATIC_PATH", "web_routes"]
