"""One request-body limit for every route the application serves: REST, both MCP endpoints and
the web inbox (``CLARION_MAX_BODY_BYTES``).

A body whose declared ``Content-Length`` is over the limit is refused before any of it is
read; a body without one (chunked) is read up to the limit and refused as soon as it passes
it. Either way the answer is 413 ``{"error": "request body too large: the limit is N bytes
(CLARION_MAX_BODY_BYTES)"}`` and the route never runs, so nothing is written. A body within
the limit is handed on whole; later ``receive`` calls (a client disconnecting) pass through.
"""

from __future__ import annotations

from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.adapters.http_guard import request_headers
from clarion.adapters.rest.errors import failure

MAX_BODY_SCOPE_KEY: Final = "clarion.max_body_bytes"


def too_large_message(limit: int) -> str:
    """The 413 text for ``limit`` bytes."""
    return f"request body too large: the limit is {limit} bytes (CLARION_MAX_BODY_BYTES)"


class BodyLimitMiddleware:
    """Pure ASGI middleware enforcing ``max_bytes`` (see the module docstring); the limit is
    also left in the scope for :func:`clarion.adapters.rest.bodies.read_body`."""

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope[MAX_BODY_SCOPE_KEY] = self.max_bytes
        headers = request_headers(scope)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        has_body = (declared.isdigit() and int(declared) > 0) or "transfer-encoding" in headers
        if not has_body:
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                # The client left before sending its body: nothing to serve.
                return
            body.extend(message.get("body", b""))
            if len(body) > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await failure(413, too_large_message(self.max_bytes))(scope, receive, send)
