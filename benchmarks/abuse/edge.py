"""The network edge under a socket flood (issue #29 S1 and S12): ``/healthz`` and an
authenticated request's latency while many stalled-body or idle sockets are open, and the
``accept()`` error log of a server at its open-file limit.

Starts ``clarion serve`` itself (SQLite in a temporary directory, a free loopback port,
``CLARION_AUTH=enabled`` with a user and a token made by ``clarion users create`` and
``clarion tokens create`` on the same database), then, each phase with a fresh server:

- baseline: ``--probes`` sequential ``GET /healthz`` and ``GET /api/v1/workspaces`` (bearer
  token), each on a new connection;
- stalled bodies: ``--sockets`` connections that each send the head of
  ``POST /api/v1/auth/login`` and 1 of its 100 body bytes, from one loopback address
  (127.0.0.2), again spread over ten (127.0.0.2-11), and ``--over-limit`` of them (more
  than the server's connection limit of 1000) spread over twelve; the probes (from
  127.0.0.1) run during ``--window`` seconds while they are held open, and how many the
  server still holds at the end of the window and 12 s after they opened (past the 10 s
  timeouts) is counted;
- idle sockets: the same with connections that send nothing;
- out of file descriptors: the server under an open-file limit of 1024 (soft and hard),
  ``--idle-over-limit`` idle sockets, and the bytes it writes to stderr in ``--window``
  seconds.

Run it against the code before and after::

    python -m benchmarks.abuse.edge --clarion /work/wt/base/.venv/bin/clarion
    python -m benchmarks.abuse.edge --clarion .venv/bin/clarion

Everything stays on loopback, every socket is closed and every server stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs

PROBE_TIMEOUT_S = 5.0
LATE_CHECK_S = 12.0  # past the default header and body timeouts (10 s)
STARTUP_TIMEOUT_S = 60.0
STALLED_HEAD = (
    b"POST /api/v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
)


@attrs.define
class Server:
    port: int
    process: subprocess.Popen[bytes]
    stderr_path: Path
    token: str


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def raise_open_file_limit() -> tuple[int, int]:
    """Raise this process's soft open-file limit to its hard limit; returns (soft, hard)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def _run(command: Sequence[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=120)
    return done.stdout.strip().splitlines()[-1]


def _limit_files_to_1024() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


@contextmanager
def serving(clarion: str, folder: Path, *, files_1024: bool = False) -> Iterator[Server]:
    """``clarion serve`` with authentication on a fresh SQLite database, and a token."""
    database = f"sqlite:///{folder / 'edge.db'}"
    user = _run([clarion, "users", "create", "bench", "--database-url", database])
    token = _run([clarion, "tokens", "create", user, "--database-url", database])
    port = _free_port()
    env = {
        **os.environ,
        "CLARION_DATABASE_URL": database,
        "CLARION_PORT": str(port),
        "CLARION_AUTH": "enabled",
        "CLARION_LOG_FORMAT": "json",
    }
    stderr_path = folder / "serve.log"
    with stderr_path.open("wb") as log:
        process = subprocess.Popen(
            [clarion, "serve"],
            env=env,
            stdout=log,
            stderr=log,
            preexec_fn=_limit_files_to_1024 if files_1024 else None,
        )
    server = Server(port=port, process=process, stderr_path=stderr_path, token=token)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while _request(port, _health())[0] != 200:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"clarion serve did not start:\n{stderr_path.read_text()}")
            time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(15)
        for path in folder.iterdir():
            path.unlink()


def _health() -> bytes:
    return b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def _authenticated(token: str) -> bytes:
    return (
        f"GET /api/v1/workspaces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    ).encode()


def _request(port: int, request: bytes, source: str = "127.0.0.1") -> tuple[int | None, float]:
    """(status or None on failure, seconds) of one request on a new connection."""
    started = time.perf_counter()
    try:
        with socket.create_connection(
            ("127.0.0.1", port), timeout=PROBE_TIMEOUT_S, source_address=(source, 0)
        ) as connection:
            connection.sendall(request)
            head = b""
            while b"\r\n" not in head:
                chunk = connection.recv(4096)
                if not chunk:
                    break
                head += chunk
    except OSError:
        return None, time.perf_counter() - started
    elapsed = time.perf_counter() - started
    parts = head.split(b" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return status, elapsed


@attrs.define
class Probes:
    label: str
    results: list[tuple[int | None, float]] = attrs.field(factory=list)

    def line(self) -> str:
        statuses = Counter("failed" if s is None else str(s) for s, _ in self.results)
        ok = statuses.get("200", 0)
        times = [t for s, t in self.results if s == 200]
        timing = (
            f"median {1000 * statistics.median(times):.1f} ms, max {1000 * max(times):.1f} ms"
            if times
            else "no 200"
        )
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items()))
        return f"{self.label} {ok}/{len(self.results)} answered 200 ({shown}); {timing}"


def _probe(server: Server, *, count: int, window_s: float | None) -> tuple[Probes, Probes]:
    """``count`` rounds of both probes, spread over ``window_s`` when given."""
    health, authed = Probes("/healthz"), Probes("authenticated GET /api/v1/workspaces")
    pause = (window_s / count) if window_s else 0.0
    for _ in range(count):
        started = time.monotonic()
        health.results.append(_request(server.port, _health()))
        authed.results.append(_request(server.port, _authenticated(server.token)))
        time.sleep(max(0.0, pause - (time.monotonic() - started)))
    return health, authed


def _open_sockets(
    port: int, count: int, sources: Sequence[str], first: bytes
) -> list[socket.socket]:
    opened: list[socket.socket] = []
    for index in range(count):
        try:
            connection = socket.create_connection(
                ("127.0.0.1", port),
                timeout=PROBE_TIMEOUT_S,
                source_address=(sources[index % len(sources)], 0),
            )
            if first:
                connection.sendall(first)
        except OSError:
            break
        opened.append(connection)
    return opened


def _still_open(sockets: Sequence[socket.socket]) -> int:
    """How many of ``sockets`` the server has not closed (nor answered)."""
    count = 0
    for connection in sockets:
        connection.setblocking(False)
        try:
            if connection.recv(1, socket.MSG_PEEK):
                continue  # answered (a refusal or a 408)
        except BlockingIOError:
            count += 1
            continue
        except OSError:
            continue
    return count


def _flood(
    server: Server,
    *,
    what: str,
    count: int,
    sources: Sequence[str],
    first: bytes,
    probes: int,
    window_s: float,
) -> None:
    opened = time.monotonic()
    sockets = _open_sockets(server.port, count, sources, first)
    try:
        time.sleep(0.5)  # let the server accept them all
        health, authed = _probe(server, count=probes, window_s=window_s)
        held = _still_open(sockets)
        time.sleep(max(0.0, LATE_CHECK_S - (time.monotonic() - opened)))
        late = _still_open(sockets)
        label = f"{len(sockets)} {what} sockets from {len(sources)} address(es)"
        print(
            f"  {label}: {held} still held after the {window_s:g} s window, "
            f"{late} after {LATE_CHECK_S:g} s"
        )
        print(f"    {health.line()}")
        print(f"    {authed.line()}")
    finally:
        for connection in sockets:
            connection.close()


def _accept_log(clarion: str, folder: Path, idle: int, window_s: float) -> None:
    with serving(clarion, folder, files_1024=True) as server:
        before = server.stderr_path.stat().st_size
        sockets = _open_sockets(server.port, idle, ["127.0.0.1"], b"")
        try:
            time.sleep(window_s)
            written = server.stderr_path.stat().st_size - before
            text = server.stderr_path.read_text(errors="replace")
            lines = sum(
                1
                for line in text.splitlines()
                if "out of system resource" in line or "accept_failed" in line
            )
            health = _request(server.port, _health())
        finally:
            for connection in sockets:
                connection.close()
        print(
            f"  open-file limit 1024, {len(sockets)} idle sockets, {window_s:g} s: "
            f"{written} bytes on stderr, {lines} accept() error lines; /healthz then: "
            f"{health[0]}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--clarion", required=True, help="the clarion executable to measure")
    parser.add_argument("--sockets", type=int, default=999, help="sockets per flood")
    parser.add_argument("--probes", type=int, default=12, help="probe rounds per phase")
    parser.add_argument("--window", type=float, default=6.0, help="seconds probed per flood")
    parser.add_argument(
        "--over-limit", type=int, default=1100, help="sockets of the flood beyond the limit"
    )
    parser.add_argument("--idle-over-limit", type=int, default=1100)
    parser.add_argument("--skip-accept-log", action="store_true")
    args = parser.parse_args(argv)
    soft, hard = raise_open_file_limit()
    print(f"clarion: {args.clarion}")
    print(f"bench RLIMIT_NOFILE: soft {soft}, hard {hard}")
    budget = soft - 100
    count = min(args.sockets, budget)
    if count < args.sockets:
        print(f"  (sockets lowered to {count} to fit the open-file limit)")
    one = ["127.0.0.2"]
    ten = [f"127.0.0.{n}" for n in range(2, 12)]
    twelve = [f"127.0.0.{n}" for n in range(2, 14)]
    over = min(args.over_limit, budget)
    floods = [
        ("stalled-body", STALLED_HEAD, count, one),
        ("stalled-body", STALLED_HEAD, count, ten),
        ("idle", b"", count, one),
        ("idle", b"", count, ten),
        # More than the server's connection limit (1000), from enough addresses that the
        # per-client limit does not stop them.
        ("stalled-body", STALLED_HEAD, over, twelve),
    ]
    phases: list[tuple[str, Callable[[Server], None]]] = [
        ("baseline", lambda s: _print_baseline(s, args.probes)),
        *(
            (
                f"{what}, {n} sockets, {len(sources)} address(es)",
                lambda s, what=what, first=first, n=n, sources=sources: _flood(
                    s,
                    what=what,
                    count=n,
                    sources=sources,
                    first=first,
                    probes=args.probes,
                    window_s=args.window,
                ),
            )
            for what, first, n, sources in floods
        ),
    ]
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        for name, phase in phases:
            print(f"{name}:")
            with serving(args.clarion, folder) as server:
                phase(server)
        if not args.skip_accept_log:
            print("out of file descriptors:")
            _accept_log(args.clarion, folder, min(args.idle_over_limit, budget), args.window)
    return 0


def _print_baseline(server: Server, probes: int) -> None:
    health, authed = _probe(server, count=probes, window_s=None)
    print(f"    {health.line()}")
    print(f"    {authed.line()}")


if __name__ == "__main__":
    raise SystemExit(main())
