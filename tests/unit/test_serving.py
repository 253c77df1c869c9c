"""The pieces of ``clarion serve``'s connection gate that need no socket: the connection book,
the request-line check, the remote address a connection counts against, and the rate limit
on ``accept()`` error logs (issue #29 S1 and S12); the process's collector setting and the
request head's size (issue #35)."""

from __future__ import annotations

import asyncio
import errno
import gc
import itertools
from typing import Any

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from clarion.app.root.serving import (
    GC_YOUNG_THRESHOLD,
    HEALTH_RESERVE,
    RESERVED_FILES,
    AcceptErrorLog,
    Admission,
    ConnectionBook,
    HeadCount,
    client_of,
    is_accept_error,
    is_health_probe,
    served_limit,
    tune_collector,
)


def _accept_error(code: int = errno.EMFILE) -> dict[str, Any]:
    return {
        "message": "socket.accept() out of system resource",
        "exception": OSError(code, "Too many open files"),
    }


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_accept_errors_are_logged_once_per_interval_with_the_count_left_out() -> None:
    """#29 S12: 1,100 idle sockets under `ulimit -n 1024` wrote 46 MB of accept() errors in
    12 s, one traceback per failed accept(); now one line per interval."""
    clock = _Clock()
    limiter = AcceptErrorLog(interval_s=10.0, clock=clock)
    loop = asyncio.new_event_loop()
    try:
        with structlog.testing.capture_logs() as logs:
            for _ in range(5000):
                limiter(loop, _accept_error())
            clock.now += 9.9
            limiter(loop, _accept_error(errno.ENFILE))
            clock.now += 0.2
            limiter(loop, _accept_error())
    finally:
        loop.close()
    assert [entry["event"] for entry in logs] == ["connections.accept_failed"] * 2
    assert logs[0]["suppressed"] == 0
    assert logs[1]["suppressed"] == 5000
    assert "Too many open files" in logs[1]["error"]
    assert "ulimit -n" in logs[1]["hint"]


def test_other_loop_errors_go_to_the_handler_it_replaced() -> None:
    seen: list[dict[str, Any]] = []
    limiter = AcceptErrorLog(fallback=lambda loop, context: seen.append(context))
    loop = asyncio.new_event_loop()
    try:
        other = {"message": "Task exception was never retrieved", "exception": ValueError()}
        refused = {"message": "socket.accept() failed", "exception": OSError(errno.EPERM, "x")}
        with structlog.testing.capture_logs() as logs:
            limiter(loop, other)
            limiter(loop, refused)
    finally:
        loop.close()
    assert seen == [other, refused]
    assert logs == []


def test_install_keeps_the_previous_handler_as_fallback() -> None:
    seen: list[dict[str, Any]] = []
    loop = asyncio.new_event_loop()
    try:
        loop.set_exception_handler(lambda loop, context: seen.append(context))
        AcceptErrorLog().install(loop)
        loop.call_exception_handler({"message": "boom"})
        with structlog.testing.capture_logs() as logs:
            loop.call_exception_handler(_accept_error())
            loop.call_exception_handler(_accept_error())
    finally:
        loop.close()
    assert seen == [{"message": "boom"}]
    assert len(logs) == 1


def test_is_accept_error_wants_an_accept_message_and_a_resource_errno() -> None:
    assert is_accept_error(_accept_error(errno.EMFILE))
    assert is_accept_error(_accept_error(errno.ENOBUFS))
    assert not is_accept_error({"message": "socket.accept() out of system resource"})
    assert not is_accept_error({"message": "read failed", "exception": OSError(errno.EMFILE, "")})


def test_the_book_counts_per_client_and_overall() -> None:
    """#29 S1: one address may hold `per_client` connections; others still get in."""
    book = ConnectionBook(limit=3, per_client=2)
    assert book.admit("10.0.0.1") is Admission.SERVED
    assert book.admit("10.0.0.1") is Admission.SERVED
    assert book.admit("10.0.0.1") is Admission.CLIENT_LIMIT
    assert book.admit(None) is Admission.SERVED  # a Unix socket: no address to count
    assert book.admit("10.0.0.2") is Admission.BUSY
    book.release("10.0.0.1")
    assert book.by_client == {"10.0.0.1": 1}
    assert book.admit("10.0.0.2") is Admission.SERVED
    book.release("10.0.0.1")
    assert "10.0.0.1" not in book.by_client


def test_the_reserve_gives_way_oldest_first_and_bounds_probes() -> None:
    book = ConnectionBook(limit=1, per_client=1, reserve=2)
    first, second, third = object(), object(), object()
    assert book.hold(first) is None
    assert book.hold(second) is None
    assert book.hold(third) is first
    assert book.start_probe(second)
    assert book.start_probe(third)
    assert not book.start_probe(object())  # two probes fill the reserve
    book.end_probe()
    assert book.start_probe(object())


@pytest.mark.parametrize(
    ("line", "probe"),
    [
        (b"GET /healthz HTTP/1.1\r\n", True),
        (b"HEAD /healthz HTTP/1.0", True),
        (b"GET /healthz?full=1 HTTP/1.1", True),
        (b"POST /healthz HTTP/1.1", False),
        (b"GET /healthz/x HTTP/1.1", False),
        (b"GET /api/v1/me HTTP/1.1", False),
        (b"GET /healthz", False),
        (b"GET  /healthz HTTP/1.1", False),
    ],
)
def test_only_a_get_or_head_of_healthz_is_a_health_probe(line: bytes, probe: bool) -> None:
    assert is_health_probe(line) is probe


def test_a_connection_counts_against_its_remote_address() -> None:
    assert client_of(("127.0.0.2", 5000)) == "127.0.0.2"
    assert client_of(("::ffff:10.1.2.3", 5000, 0, 0)) == "10.1.2.3"
    # One host commonly has a whole IPv6 /64: it counts as one address.
    assert client_of(("2001:db8::1", 5000, 0, 0)) == "2001:db8::/64"
    assert client_of(("2001:db8::ffff:1", 5000, 0, 0)) == "2001:db8::/64"
    assert client_of(("fe80::1%eth0", 5000, 0, 2)) == "fe80::/64"
    assert client_of("") is None
    assert client_of(None) is None


def test_the_served_limit_fits_the_open_file_limit() -> None:
    """#29 S12: with `ulimit -n 1024` and the default limit of 1000, accept() ran out of
    file descriptors; the limit is lowered so that it cannot."""
    assert served_limit(1000, 1024) == 1024 - RESERVED_FILES - HEALTH_RESERVE
    assert served_limit(1000, 100_000) == 1000
    assert served_limit(1000, 50) == 1


def test_no_module_relies_on_uvicorn_internals() -> None:
    """#29 F22: serving.py subclassed uvicorn's private h11 protocol
    (``uvicorn.protocols.http.h11_impl``); Clarion now imports only the ``uvicorn`` package
    itself (its public ``Config`` and ``Server``), so an upgrade cannot silently break the
    connection limits and timeouts."""
    import ast
    from pathlib import Path

    import clarion

    imported: dict[str, set[str]] = {}
    for path in Path(clarion.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                names = {node.module}
            else:
                continue
            for name in names:
                if name == "uvicorn" or name.startswith("uvicorn."):
                    imported.setdefault(name, set()).add(path.name)
    assert set(imported) == {"uvicorn"}, imported


def test_the_servers_collector_runs_young_collections_ten_times_less_often() -> None:
    """#35: ``clarion serve`` raises the collector's first threshold (full collections of a
    replica holding a thousand parked agents took 13–15 % of its CPU); the other two stay."""
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 11, 12)
        tune_collector()
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, 11, 12)
    finally:
        gc.set_threshold(*saved)


@given(
    head_size=st.integers(min_value=23, max_value=300),
    body=st.binary(max_size=400),
    cuts=st.lists(st.integers(min_value=0, max_value=800), max_size=8),
    limit=st.integers(min_value=20, max_value=300),
)
def test_a_head_fits_when_its_bytes_up_to_the_blank_line_do_however_it_is_read(
    head_size: int, body: bytes, cuts: list[int], limit: int
) -> None:
    """#35: the gate counts a head up to its blank line, whichever reads split it (the end
    too), and nothing after it — a body sent with its head, even one holding CRLFCRLF."""
    head = b"GET / HTTP/1.1\r\nX: " + b"a" * (head_size - 23) + b"\r\n\r\n"
    assert len(head) == head_size
    data = head + body
    bounds = sorted({0, len(data), *(cut for cut in cuts if cut < len(data))})
    count = HeadCount(limit)
    fits = all(count.fits(data[a:b]) for a, b in itertools.pairwise(bounds))
    assert fits == (head_size <= limit)
    if fits:
        assert count.whole  # it found the end, and counts nothing after it


def test_a_head_without_its_end_keeps_counting() -> None:
    count = HeadCount(10)
    assert count.fits(b"GET / HTTP")
    assert not count.fits(b"/")
    assert not count.whole
