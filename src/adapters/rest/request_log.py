"""Structured request logging: one line per HTTP request, never a body.

Each line carries ``request_id``, ``method``, ``route``, ``path``, ``status`` and
``duration_ms``. The request id is the caller's ``X-Request-ID`` when it is a short token, else
a new one; it is echoed in the response header and bound in structlog's context variables, so
every line logged while serving the request carries it. Question and answer text never reach
a log line: only the method and the path (ids) are logged, never the query string, a header,
a cookie or a body.

No secret reaches a log line either (#29 S5): anyone who reads the logs could otherwise use
it. ``route`` is the route template (``/answer/{token}``; ``unmatched`` when no route
matched), and ``path`` is the path with every secret in it replaced by a short hash
(``h:`` and 12 hex digits of its SHA-256, enough to tell two visits of one link apart from
visits of another): a path parameter named in :data:`SECRET_PARAMETERS` (the answer link's
token), and any segment longer than :data:`LONG_SEGMENT` characters — every token Clarion
issues (answer links, personal access tokens, agent tokens, session cookies) is longer than
that and every id shorter, so a token pasted into a wrong URL is hashed too.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import urllib.parse
from collections.abc import Mapping
from typing import Final

import structlog
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.adapters.http_guard import request_headers

log = structlog.get_logger(__name__)

REQUEST_ID_HEADER: Final = "X-Request-ID"
_REQUEST_ID_KEY: Final = REQUEST_ID_HEADER.lower()
_ACCEPTABLE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
UNMATCHED: Final = "unmatched"
SECRET_PARAMETERS: Final = frozenset({"token"})
LONG_SEGMENT: Final = 40  # ids (UUIDs: 36) are shorter; tokens (43 and more) longer
_HASH_DIGITS: Final = 12


def short_hash(secret: str) -> str:
    """``h:`` and the first 12 hex digits of ``secret``'s SHA-256: what a log shows instead."""
    return "h:" + hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_DIGITS]


def route_template(scope: Scope) -> str:
    """The template of the route that served the request (Starlette's router leaves it in the
    scope), ``unmatched`` when none did."""
    path = getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) and path else UNMATCHED


def loggable_path(scope: Scope) -> str:
    """The request's path with its secrets replaced by :func:`short_hash` (module docstring)."""
    params = scope.get("path_params")
    secrets = (
        {
            str(value)
            for name, value in params.items()
            if name in SECRET_PARAMETERS and isinstance(value, str) and value
        }
        if isinstance(params, Mapping)
        else set()
    )
    segments = str(scope.get("path", "")).split("/")
    return "/".join(
        short_hash(segment)
        if segment in secrets
        or urllib.parse.unquote(segment) in secrets
        or len(segment) > LONG_SEGMENT
        else segment
        for segment in segments
    )


def _request_id(scope: Scope) -> str:
    """The caller's ``X-Request-ID`` when it is a short token, else 32 random hex digits (the
    shape ``uuid4().hex`` had, without building a UUID for every request, #35)."""
    offered = request_headers(scope).get(_REQUEST_ID_KEY, "")
    return offered if _ACCEPTABLE_ID.fullmatch(offered) else os.urandom(16).hex()


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

        # Bound for every line logged while serving, and reset afterwards to what it was (the
        # tokens of bind_contextvars: structlog's bound_contextvars does the same with a
        # generator and a copy of the whole context, #35).
        bound = structlog.contextvars.bind_contextvars(request_id=request_id)
        failed = True
        try:
            await self.app(scope, receive, send_with_id)
            failed = False
        finally:
            try:
                fields = {
                    # Explicit as well as bound: a host whose structlog configuration does
                    # not merge context variables still gets the id on this line.
                    "request_id": request_id,
                    "method": scope["method"],
                    "route": route_template(scope),
                    "path": loggable_path(scope),
                    "status": status,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 3),
                }
                if failed:
                    log.error("http_request_failed", **fields)
                else:
                    log.info("http_request", **fields)
            finally:
                structlog.contextvars.reset_contextvars(**bound)
