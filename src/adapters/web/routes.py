"""Starlette routes serving the inbox page and its assets from package data.

Every asset is served by Clarion; the page's Content-Security-Policy allows no other origin,
so the browser makes no external request (no CDN, no web font, no analytics).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.adapters.web.answer import answer_routes
from clarion.app.usecases.answer_links import AnswerLinks

STATIC_PATH = "/static"
_PACKAGE = "clarion.adapters.web"
_ASSETS = "static"

_CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)

PAGE_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": _CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # The page carries no secret, but a stale copy could run an outdated script against a
    # newer API; revalidate on every load.
    "Cache-Control": "no-cache",
}

_ASSET_HEADERS: Mapping[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


class _AddHeaders:
    """Pure ASGI wrapper adding fixed response headers (keeps StaticFiles' ETag handling)."""

    def __init__(self, app: ASGIApp, headers: Mapping[str, str]) -> None:
        self._app = app
        self._headers = [(k.lower().encode(), v.encode()) for k, v in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *self._headers]}
            await send(message)

        await self._app(scope, receive, send_with_headers)


def _read_page() -> str:
    return (resources.files(_PACKAGE) / _ASSETS / "index.html").read_text(encoding="utf-8")


def web_routes(answer_links: AnswerLinks | None = None) -> list[BaseRoute]:
    """The inbox routes: ``GET /`` (the page) and ``/static/...`` (its assets), plus, with
    ``answer_links``, the answer-link page ``/answer/{token}`` (:mod:`.answer`).

    Mount them after the API routes; they claim only ``/``, :data:`STATIC_PATH` and
    ``/answer/``. The page is read once here, when the routes are built, never at import time.
    """
    page = _read_page()

    async def inbox(request: Request) -> Response:
        return HTMLResponse(page, headers=dict(PAGE_HEADERS))

    assets = StaticFiles(packages=[(_PACKAGE, _ASSETS)])
    return [
        Route("/", inbox, methods=["GET"], name="web_inbox"),
        Mount(STATIC_PATH, app=_AddHeaders(assets, _ASSET_HEADERS), name="web_static"),
        *(answer_routes(answer_links) if answer_links is not None else ()),
    ]
