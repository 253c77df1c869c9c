"""A real Clarion server for the browser tests: the application ``build_clarion`` composes
(REST + MCP + web inbox) under uvicorn on a free 127.0.0.1 port, in a background thread (the
browser driver owns the test thread), over a temporary SQLite database.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

import attrs
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.app.root.compose import build_clarion
from clarion.app.root.settings import Settings
from clarion.app.usecases.auth import Authentication
from tests.sockets import base_url, listening_socket, quiet_uvicorn

STARTUP_TIMEOUT_S = 30.0


@attrs.frozen
class ServedClarion:
    """A running server: where it listens and how to issue its users tokens."""

    base_url: str
    auth_enabled: bool
    authentication: Authentication

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"


class _Lifespan:
    """Passes everything through to the application, noting when its lifespan has started
    and on which event loop (so the test thread can reach that loop at shutdown)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.settled = threading.Event()
        self.started = False
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def watch(message: Message) -> None:
            if message["type"] in ("lifespan.startup.complete", "lifespan.startup.failed"):
                self.started = message["type"] == "lifespan.startup.complete"
                self.loop = asyncio.get_running_loop()
                self.settled.set()
            await send(message)

        await self.app(scope, receive, watch)


@contextlib.contextmanager
def serve_clarion(database_url: str, *, auth_enabled: bool) -> Iterator[ServedClarion]:
    """Serve a freshly built Clarion until the block ends.

    The socket listens before uvicorn starts, so early connections wait in the backlog.
    """
    clarion = build_clarion(Settings(database_url=database_url, auth_enabled=auth_enabled))
    app = _Lifespan(clarion.asgi_app)
    sock = listening_socket()
    server = quiet_uvicorn(app, graceful_s=3)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        if not app.settled.wait(STARTUP_TIMEOUT_S) or not app.started:
            raise RuntimeError("Clarion did not start")
        yield ServedClarion(
            base_url=base_url(sock),
            auth_enabled=auth_enabled,
            authentication=clarion.authentication,
        )
    finally:
        # A page still open would hold the graceful shutdown with its event stream: end the
        # streams first, on the server's own loop.
        loop = app.loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(clarion.asgi_app.state.rest.events.close)
        server.should_exit = True
        thread.join(STARTUP_TIMEOUT_S)
        sock.close()
        clarion.close()
