"""Connections under ``clarion serve``'s uvicorn configuration (issues #14 and #29): idle and
slow connections are closed, stalled bodies are answered 408, connections beyond the
concurrency limit — or beyond one address's limit — are refused with 503 (429), and
``/healthz`` is answered all the same; a request head past 16 KiB is answered 431 (#35: the
limit h11 kept, kept by the gate in front of httptools).

The server runs in a thread with :func:`clarion.app.root.serving.uvicorn_config` and
:class:`~clarion.app.root.serving.ClarionServer`; the socket timeouts below only stop a broken
test from hanging, they assert nothing about timing."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from clarion.adapters.body_deadline import BodyDeadline
from clarion.app.root.serving import MAX_HEAD_BYTES, ClarionServer, uvicorn_config
from clarion.app.root.settings import Settings
from tests.sockets import free_port

GUARD_S = 20.0  # a socket that neither closes nor answers within this is a failure
REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def _hello(request: Request) -> PlainTextResponse:
    return PlainTextResponse("hello")


async def _slow(request: Request) -> PlainTextResponse:
    await anyio.sleep(1.0)  # longer than the header and body timeouts of the tests below
    return PlainTextResponse("late")


async def _echo(request: Request) -> PlainTextResponse:
    body = await request.body()
    if request.query_params.get("slow"):
        await anyio.sleep(1.0)  # served past the body timeout, the body being in
    return PlainTextResponse(f"got {len(body)}")


async def _healthz(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


@contextmanager
def serving(**limits: object) -> Iterator[int]:
    port = free_port()
    settings = Settings(database_url="memory://", port=port, **limits)  # type: ignore[arg-type]
    app = Starlette(
        routes=[
            Route("/", _hello),
            Route("/slow", _slow),
            Route("/echo", _echo, methods=["POST"]),
            Route("/healthz", _healthz, methods=["GET", "HEAD"]),
        ],
        # As the composition root installs it (clarion.adapters.rest.app).
        middleware=[Middleware(BodyDeadline, timeout_s=settings.body_timeout_s)],
    )
    server = ClarionServer(uvicorn_config(app, settings, lifespan="off"))
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


def _connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    connection = socket.create_connection(
        ("127.0.0.1", port), timeout=GUARD_S, source_address=(source, 0)
    )
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

    from clarion.app.root.serving import HEALTH_RESERVE, RESERVED_FILES, ensure_open_files

    original = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft, hard = original
    try:
        assert ensure_open_files(1) == ""
        if hard == resource.RLIM_INFINITY:
            return  # nothing can be out of reach
        assert ensure_open_files(hard - RESERVED_FILES - HEALTH_RESERVE) == ""
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == max(soft, hard)
        warning = ensure_open_files(hard)
        assert f"the open-file limit ({hard})" in warning
        assert "ulimit -n" in warning
        # #29 S12: the connections served are lowered to fit, so accept() does not run out.
        assert f"serving at most {hard - RESERVED_FILES - HEALTH_RESERVE} connections" in warning
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, original)


HEALTH = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
STALLED = (
    b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100\r\n\r\n{"
)


def _hold(port: int, count: int, source: str = "127.0.0.1") -> list[socket.socket]:
    """``count`` connections that have sent nothing yet (each is counted once the server
    answers a request on another connection after it: the server accepts in order)."""
    return [_connect(port, source) for _ in range(count)]


def _answered(port: int, request: bytes, source: str = "127.0.0.1") -> bytes:
    with _connect(port, source) as connection:
        return _response(connection, request)


def test_a_stalled_request_body_is_answered_408_and_the_connection_closed() -> None:
    """#29 S1: a head and 1 of 100 body bytes held a connection (and a slot of the
    connection limit) for as long as the client liked; now the body has a deadline."""
    with serving(header_timeout_s=30, body_timeout_s=0.5) as port, _connect(port) as stalled:
        stalled.sendall(STALLED)
        answer = _response(stalled, b"")
        assert answer.startswith(b"HTTP/1.1 408")
        assert b"CLARION_BODY_TIMEOUT_S" in answer
        assert _closed_by_server(stalled)


def test_a_body_trickled_a_byte_at_a_time_is_cut_off_at_the_deadline() -> None:
    """#29 S1: sending now and then does not extend the deadline."""
    with serving(header_timeout_s=30, body_timeout_s=0.5) as port, _connect(port) as slow:
        slow.sendall(STALLED)
        received = b""
        for _ in range(int(GUARD_S / 0.1)):
            try:
                slow.sendall(b" ")
            except (BrokenPipeError, ConnectionResetError):
                break
            slow.settimeout(0.1)
            try:
                chunk = slow.recv(4096)
            except TimeoutError:
                continue
            except ConnectionResetError:
                break
            if not chunk:
                break
            received += chunk
        assert received.startswith(b"HTTP/1.1 408")


def test_the_body_deadline_spares_requests_whose_body_is_in_and_requests_without_one() -> None:
    """#29 S1: only waiting for body bytes is timed — not serving the request afterwards
    (an MCP call that waits), nor a request without a body (an event stream)."""
    posted = (
        b"POST /echo?slow=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    with serving(header_timeout_s=30, body_timeout_s=0.2) as port:
        assert _answered(port, posted).endswith(b"got 2")
        assert _answered(port, b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").endswith(b"late")


def test_healthz_is_answered_while_the_connection_limit_is_reached() -> None:
    """#29 S1: at the limit every request got 503, /healthz included, so an orchestrator
    restarted a process that was merely busy. Beyond the limit only /healthz is served."""
    limit = 2
    with serving(header_timeout_s=30, limit_concurrency=limit) as port:
        held = _hold(port, limit)
        try:
            assert _answered(port, REQUEST).startswith(b"HTTP/1.1 503")
            health = _answered(port, HEALTH)
            assert health.startswith(b"HTTP/1.1 200")
            assert health.endswith(b"ok")
            head = _answered(port, b"HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200")
        finally:
            for connection in held:
                connection.close()


def test_healthz_is_answered_while_idle_connections_flood_the_reserve() -> None:
    """#29 S1: connections beyond the limit that never send a request line cannot keep the
    health probe out: the oldest of them gives way to each new one."""
    from clarion.app.root.serving import HEALTH_RESERVE

    with serving(header_timeout_s=30, limit_concurrency=1) as port:
        held = _hold(port, 1 + HEALTH_RESERVE + 5)
        try:
            assert _answered(port, HEALTH).startswith(b"HTTP/1.1 200")
            assert _closed_by_server(held[1])  # the oldest beyond the limit gave way
        finally:
            for connection in held:
                connection.close()


def test_one_address_cannot_take_every_connection() -> None:
    """#29 S1: 999 sockets from one client took the whole server; now one address holds at
    most CLARION_MAX_CONNECTIONS_PER_CLIENT, and other addresses are served."""
    with serving(header_timeout_s=30, max_connections_per_client=3) as port:
        held = _hold(port, 3, source="127.0.0.2")
        try:
            refused = _answered(port, REQUEST, source="127.0.0.2")
            assert refused.startswith(b"HTTP/1.1 429")
            assert b"CLARION_MAX_CONNECTIONS_PER_CLIENT" in refused
            assert _answered(port, REQUEST).startswith(b"HTTP/1.1 200")
            # The probe is answered from the address at its limit too.
            assert _answered(port, HEALTH, source="127.0.0.2").startswith(b"HTTP/1.1 200")
            held.pop().close()
            deadline = time.monotonic() + GUARD_S
            while not _answered(port, REQUEST, source="127.0.0.2").startswith(b"HTTP/1.1 200"):
                assert time.monotonic() < deadline, "still refused after one closed"
                time.sleep(0.05)
        finally:
            for connection in held:
                connection.close()


def test_bytes_trickled_after_an_early_response_do_not_keep_the_connection() -> None:
    """A response sent before the body was read (here: a route that ignores it) re-arms the
    request-head timer; the unread body trickling in does not stop it."""
    request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n"
    with serving(header_timeout_s=0.5, keep_alive_timeout_s=30) as port, _connect(port) as c:
        c.sendall(request)
        closed = False
        for _ in range(int(GUARD_S / 0.1)):
            try:
                c.sendall(b"x")
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            c.settimeout(0.1)
            try:
                if c.recv(4096) == b"" and not closed:
                    closed = True
                    break
            except TimeoutError:
                continue
            except ConnectionResetError:
                closed = True
                break
        assert closed


def _head_of(size: int, path: bytes = b"/", method: bytes = b"GET") -> bytes:
    """A request head of exactly ``size`` bytes, its blank line included."""
    start = method + b" " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: "
    padding = size - len(start) - len(b"\r\n\r\n")
    return start + b"a" * padding + b"\r\n\r\n"


def test_a_request_head_past_the_limit_is_answered_431_and_closed() -> None:
    """httptools sets no bound on a head; without the gate's, one endless head would grow
    the server's memory until the header timeout."""
    with serving() as port, _connect(port) as client:
        client.sendall(_head_of(MAX_HEAD_BYTES + 1))
        received = b""
        while chunk := client.recv(4096):
            received += chunk
        assert received.startswith(b"HTTP/1.1 431 ")
        assert b"the request head is too large: the limit is 16384 bytes" in received


def test_an_endless_head_is_cut_off_at_the_limit() -> None:
    with serving(header_timeout_s=30) as port, _connect(port) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        refused = b""
        try:
            for _ in range(MAX_HEAD_BYTES // 1024 + 2):
                client.sendall(b"X-Pad: " + b"a" * 1017 + b"\r\n")
            while chunk := client.recv(4096):
                refused += chunk
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed before all of it was sent: cut off all the same
        assert refused == b"" or refused.startswith(b"HTTP/1.1 431 ")


def test_heads_up_to_the_limit_are_served_on_one_connection() -> None:
    """Each request of a kept-alive connection has the whole limit for its own head."""
    with serving() as port, _connect(port) as client:
        for _ in range(3):
            assert _response(client, _head_of(MAX_HEAD_BYTES)).endswith(b"hello")


def test_a_body_sent_with_its_head_does_not_count_against_the_head_limit() -> None:
    body = b"b" * (4 * MAX_HEAD_BYTES)
    head = (
        b"POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
    )
    with serving() as port, _connect(port) as client:
        for _ in range(2):
            assert _response(client, head + body).endswith(f"got {len(body)}".encode())


def test_a_response_sent_before_its_body_was_read_closes_the_connection() -> None:
    """The rest of that body is still on its way: read as the next request's head, it would
    be refused 431 on a connection the client may have reused (h11 closed it too)."""
    body = b"b" * (4 * MAX_HEAD_BYTES)
    head = (
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" + f"Content-Length: {len(body)}\r\n\r\n".encode()
    )
    with serving(header_timeout_s=30, keep_alive_timeout_s=30) as port, _connect(port) as client:
        client.sendall(head)
        received = b""
        while b"hello" not in received:
            received += client.recv(4096)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            client.sendall(body)
        try:
            while chunk := client.recv(4096):
                received += chunk
        except ConnectionResetError:
            pass
        assert received.count(b"HTTP/1.1 ") == 1, received
        assert received.startswith(b"HTTP/1.1 200 ")


_OUT_OF_FILES = """
import os, resource, socket, sys
from starlette.applications import Starlette
from starlette.middleware import Middleware
from clarion.app.root.logging_setup import configure_logging
from clarion.adapters.body_deadline import BodyDeadline
from clarion.app.root.serving import MAX_HEAD_BYTES, ClarionServer, uvicorn_config
from clarion.app.root.settings import Settings

configure_logging("json")
listener = socket.create_server(("127.0.0.1", 0))
settings = Settings(database_url="memory://", header_timeout_s=60)
config = uvicorn_config(Starlette(), settings, lifespan="off")
# A process at its `ulimit -n`: a few descriptors left for the loop and its first connections.
highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 8, hard))
print(listener.getsockname()[1], flush=True)
ClarionServer(config).run(sockets=[listener])
"""


def test_running_out_of_file_descriptors_logs_one_line_per_interval(tmp_path: Path) -> None:
    """#29 S12: a server out of file descriptors logged every failed accept() with its
    traceback (46 MB in 12 s); now one line per interval, naming the remedy."""
    import subprocess
    import sys

    log_path = tmp_path / "stderr.log"
    with log_path.open("wb") as log_file:
        child = subprocess.Popen(
            [sys.executable, "-c", _OUT_OF_FILES],
            stdout=subprocess.PIPE,
            stderr=log_file,
        )
    connections: list[socket.socket] = []
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        connections = [_connect(port) for _ in range(40)]
        deadline = time.monotonic() + GUARD_S
        while b"connections.accept_failed" not in log_path.read_bytes():
            assert child.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "accept() never ran out of descriptors"
            time.sleep(0.05)
        time.sleep(1.0)  # the loop retries accept() meanwhile, every failure a log line before
    finally:
        for connection in connections:
            connection.close()
        child.kill()
        child.wait(GUARD_S)
        if child.stdout is not None:
            child.stdout.close()
    lines = log_path.read_text().splitlines()
    failures = [line for line in lines if "connections.accept_failed" in line]
    assert len(failures) == 1, "\n".join(lines[-5:])
    assert "ulimit -n" in failures[0]
    assert not [line for line in lines if "out of system resource" in line]


def test_serve_keeps_asyncios_loop_where_uvloop_is_installed() -> None:
    """#29 S12 above holds on asyncio's loop only: uvicorn's default ("auto") takes uvloop
    whenever it can be imported, and under uvloop 0.23 the same out-of-descriptors case ended
    the server (``RuntimeError: Cannot close a running event loop``; seen with uvloop
    installed). A host that has uvloop for its own reasons must not lose that."""
    config = uvicorn_config(Starlette(), Settings(database_url="memory://"), lifespan="off")
    assert config.loop == "asyncio"
