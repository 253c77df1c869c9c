"""Loopback sockets and in-process uvicorn for the tests that need a real server.

- :func:`free_port` names a port nothing listens on (for a client that must fail to connect,
  or a child process that binds it itself);
- :func:`listening_socket` binds and listens at once, so clients may connect before the server
  runs (their connections wait in the backlog);
- :class:`QuietUvicorn` is uvicorn without its signal handlers (the test runner owns the
  process's signals), and :func:`serving` runs an ASGI app under it on the current event loop.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Literal

import anyio
import uvicorn
from starlette.types import ASGIApp

Lifespan = Literal["auto", "on", "off"]

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


def listening_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, 0))
    sock.listen(128)
    return sock


def base_url(sock: socket.socket) -> str:
    return f"http://{LOOPBACK}:{sock.getsockname()[1]}"


class QuietUvicorn(uvicorn.Server):
    """uvicorn without its signal handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def quiet_uvicorn(app: ASGIApp, *, lifespan: Lifespan = "on", graceful_s: int = 5) -> QuietUvicorn:
    return QuietUvicorn(
        uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan=lifespan,
            ws="none",
            timeout_graceful_shutdown=graceful_s,
        )
    )


@contextlib.asynccontextmanager
async def serving(app: ASGIApp, *, lifespan: Lifespan = "on") -> AsyncIterator[str]:
    """Serve ``app`` on a free loopback port until the block ends; yields its base URL."""
    sock = listening_socket()
    server = quiet_uvicorn(app, lifespan=lifespan)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.serve, [sock])
            try:
                yield base_url(sock)
            finally:
                server.should_exit = True
    finally:
        sock.close()


@contextlib.contextmanager
def serving_in_thread(
    app: ASGIApp, *, lifespan: Lifespan = "on", timeout_s: float = 10
) -> Iterator[str]:
    """Serve ``app`` from a background thread (for a test whose own thread blocks, such as a
    synchronous client) until the block ends; yields its base URL once uvicorn has started."""
    sock = listening_socket()
    server = quiet_uvicorn(app, lifespan=lifespan)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout_s
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            thread.join(0.01)
        yield base_url(sock)
    finally:
        server.should_exit = True
        thread.join(timeout_s)
        sock.close()
