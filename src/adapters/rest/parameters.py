"""Refusing path and query parameters no store can keep, before any route sees them.

A ``%00`` in a URL decodes to NUL, which PostgreSQL text refuses with a driver error; the same
400 that bodies get (``invalid parameter: strings may not contain NUL or unpaired surrogates``)
answers it here, for every route behind the middleware (REST, MCP endpoints, the inbox).
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Receive, Scope, Send

from clarion.adapters import wire
from clarion.adapters.rest.errors import failure

INVALID_PARAMETER = f"invalid parameter: {wire.UNSTORABLE_TEXT}"


def parameters_are_storable(scope: Scope) -> bool:
    """The decoded path and every decoded query name and value are storable text."""
    if not wire.is_storable(scope.get("path", "")):
        return False
    raw = scope.get("query_string", b"")
    if not raw:
        return True  # most requests (every MCP post) carry no query: nothing to decode
    # The same decoding Starlette's QueryParams uses (percent-escapes as UTF-8).
    return wire.is_storable(parse_qsl(raw.decode("latin-1"), keep_blank_values=True))


class StorableParametersMiddleware:
    """Pure ASGI middleware: 400 for a path or query parameter carrying NUL or a lone
    surrogate; everything else passes untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not parameters_are_storable(scope):
            await failure(400, INVALID_PARAMETER)(scope, receive, send)
            return
        await self.app(scope, receive, send)
