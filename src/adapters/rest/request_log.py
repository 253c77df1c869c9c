"""Structured request logging: one line per HTTP request, never a body.

Each line carries ``request_id``, ``method``, ``path``, ``status`` and ``duration_ms``. The
request id is the caller's ``X-Request-ID`` when it is a short token, else a new one; it is
echoed in the response header and bound in structlog's context variables, so every line
logged while serving the request carries it. Question and answer text never reach a log line:
only the method and the path (ids) are logged, never the query string or a body.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Final

import structlog
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = structlog.get_logger(__name__)

REQUEST_ID_HEADER: Final = "X-Request-ID"
_ACCEPTABLE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def _request_id(scope: Scope) -> str:
    offered = Headers(scope=scope).get(REQUEST_ID_HEADER, "")
    return offered if _ACCEPTABLE_ID.fullmatch(offered) else uuid.uuid4().hex


class RequestLogMiddleware:
    """Pure ASGI middleware (safe for streaming responses and context variables)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = request_id
            await send(message)

        with structlog.contextvars.bound_contextvars(request_id=request_id):
            failed = True
            try:
                await self.app(scope, receive, send_with_id)
                failed = False
            finally:
                fields = {
                    # Explicit as well as bound: a host whose structlog configuration does
                    # not merge context variables still gets the id on this line.
                    "request_id": request_id,
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                }
                if failed:
                    log.error("http_request_failed", **fields)
                else:
                    log.info("http_request", **fields)
