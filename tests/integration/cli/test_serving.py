"""Connections under ``clarion serve``'s uvicorn configuration (issue #14): idle and slow
connections are closed, and connections beyond the concurrency limit are refused with 503.

The server runs in a thread with :func:`clarion.app.root.serving.uvicorn_config`; the socket
timeouts below only stop a broken test from hanging, they assert nothing about timing."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from clarion.app.root.serving import uvicorn_config
from clarion.app.root.settings import Settings
from tests.sockets import free_port

GUARD_S = 20.0  # a socket that neither closes nor answers within this is a failure
REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def _hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("hello")


async def _slow(request: Request) -> PlainTextResponse:
    await anyio.sleep(1.0)  # longer than the header timeout of the test below
    return PlainTextResponse("late")


@contextmanager
def serving(**limits: object) -> Iterator[int]:
    import uvicorn

    port = free_port()
    settings = Settings(database_url="memory://", port=port, **limits)  # type: ignore[arg-type]
    app = Starlette(routes=[Route("/", _hello), Route("/slow", _slow)])
    server = uvicorn.Server(uvicorn_config(app, settings, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + GUARD_S
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)  # polling a thread we started; uvicorn offers no event to wait on
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(GUARD_S)


def _connect(port: int) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", port), timeout=GUARD_S)
    connection.settimeout(GUARD_S)
    return connection


def _closed_by_server(connection: socket.socket) -> bool:
    """True when the server closes the connection (end of stream or reset)."""
    try:
        return connection.recv(1024) == b""
    except ConnectionResetError:
        return True


def _response(connection: socket.socket, request: bytes = REQUEST) -> bytes:
    """Send one request and read its whole response (head and Content-Length body)."""
    connection.sendall(request)
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(4096)
        if not chunk:
            return received
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = connection.recv(4096)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def test_a_connection_that_never_sends_a_request_is_closed() -> None:
    with serving(header_timeout_s=0.5) as port, _connect(port) as idle:
        assert _closed_by_server(idle)


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off() -> None:
    """Slowloris: the connection keeps sending, but never finishes its head in time."""
    with serving(header_timeout_s=0.5) as port, _connect(port) as slow:
        slow.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        closed = False
        for _ in range(int(GUARD_S / 0.1)):
            try:
                slow.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            slow.settimeout(0.1)
            try:
                if slow.recv(1024) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except ConnectionResetError:
                closed = True
                break
        assert closed


def test_a_request_that_runs_longer_than_the_header_timeout_is_answered() -> None:
    """The timeout covers waiting for a request head, never a request being served (asks,
    waits and event streams run for minutes)."""
    slow = b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with serving(header_timeout_s=0.2) as port, _connect(port) as client:
        assert _response(client, slow).endswith(b"late")


def test_a_keep_alive_connection_is_served_then_closed_when_idle() -> None:
    with serving(header_timeout_s=30, keep_alive_timeout_s=0.5) as port, _connect(port) as client:
        first = _response(client)
        assert first.startswith(b"HTTP/1.1 200")
        assert first.endswith(b"hello")
        assert _closed_by_server(client)


def test_connections_beyond_the_concurrency_limit_get_503() -> None:
    limit = 2
    with serving(header_timeout_s=30, limit_concurrency=limit) as port:
        held = [_connect(port) for _ in range(limit)]
        try:
            with _connect(port) as extra:
                assert _response(extra).startswith(b"HTTP/1.1 503")
            for connection in held:
                connection.close()
            deadline = time.monotonic() + GUARD_S
            while True:  # the server notices the closed connections asynchronously
                with _connect(port) as again:
                    if _response(again).startswith(b"HTTP/1.1 200"):
                        break
                assert time.monotonic() < deadline, "still refused after the others closed"
                time.sleep(0.05)
        finally:
            for connection in held:
                connection.close()


def test_serve_raises_the_open_file_limit_to_fit_the_connections_or_says_why_not() -> None:
    import resource

    from clarion.app.root.serving import RESERVED_FILES, ensure_open_files

    original = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft, hard = original
    try:
        assert ensure_open_files(1) == ""
        if hard == resource.RLIM_INFINITY:
            return  # nothing can be out of reach
        assert ensure_open_files(hard - RESERVED_FILES) == ""
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == max(soft, hard)
        warning = ensure_open_files(hard)
        assert f"the open-file limit ({hard})" in warning
        assert "ulimit -n" in warning
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, original)
