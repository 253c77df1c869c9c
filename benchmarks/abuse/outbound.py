"""Notification delivery against hostile destinations (issue #29 S2): another route's
notification delay while a trickling webhook route exists, and the server's memory after one
webhook answers with 400 MB.

Starts ``clarion serve`` itself for each phase (SQLite in a temporary directory, a free
loopback port, auth disabled, ``CLARION_NOTIFY_POLL_S=0.5``), with the webhook receivers in
this process on loopback — which the server reaches only because the bench sets
``CLARION_OUTBOUND_ALLOW=127.0.0.1`` (code before issue #29 ignores it):

- trickle: two routes hear every question — one to a receiver that answers ``200`` and then
  its body one byte every ``--trickle-interval`` seconds (``--trickle-bytes`` of them), one to
  a receiver that answers at once. ``--bundles`` questions are asked ``--spacing`` seconds
  apart (the first sets the trickle going); for each, the time from the ask until the prompt
  receiver has it is measured (up to ``--wait`` seconds: a missing one prints as ``>``);
- huge answer: one route to a receiver that answers ``200`` with a 400 MB body, generated
  as it is sent (never held in memory here); one question is asked, and the server's
  resident memory (``VmRSS``, and its peak ``VmHWM``) is read before, and after the receiver
  has stopped sending plus ``--settle`` seconds.

Run it against the code before and after::

    python -m benchmarks.abuse.outbound --clarion /work/wt/base/.venv/bin/clarion
    python -m benchmarks.abuse.outbound --clarion .venv/bin/clarion

Everything stays on loopback; every receiver and server is stopped at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import attrs
import httpx2

STARTUP_TIMEOUT_S = 60.0
HUGE_BYTES = 400 * 1024 * 1024
CHUNK = b"x" * (1024 * 1024)
QUESTION = {
    "id": "go",
    "title": "Go",
    "prompt": "Go ahead?",
    "options": [{"label": "Yes", "description": "go"}, {"label": "No", "description": "stop"}],
}


@attrs.define
class Receiver:
    """A loopback webhook receiver in a thread; ``mode`` is "prompt", "trickle" or "huge".
    ``arrivals`` maps each notified pending id to when its first POST arrived; ``sent`` counts
    the body bytes written and ``done`` is set when a huge or trickled body ended."""

    mode: str
    trickle_bytes: int = 8
    trickle_interval_s: float = 5.0
    arrivals: dict[str, float] = attrs.field(factory=dict)
    sent: int = 0
    done: threading.Event = attrs.field(factory=threading.Event)
    stopping: threading.Event = attrs.field(factory=threading.Event)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        pending_id = _pending_id(body)
        self.arrivals.setdefault(pending_id, time.perf_counter())
        handler.send_response(200)
        if self.mode == "prompt":
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        length = HUGE_BYTES if self.mode == "huge" else self.trickle_bytes
        handler.send_header("Content-Length", str(length))
        handler.end_headers()
        with contextlib.suppress(OSError):  # the client may hang up: that is the point
            if self.mode == "huge":
                while self.sent < HUGE_BYTES and not self.stopping.is_set():
                    handler.wfile.write(CHUNK)
                    self.sent += len(CHUNK)
            else:
                for _ in range(self.trickle_bytes):
                    if self.stopping.wait(self.trickle_interval_s):
                        break
                    handler.wfile.write(b"x")
                    handler.wfile.flush()
                    self.sent += 1
        self.done.set()


def _pending_id(body: bytes) -> str:
    import json

    try:
        return str(json.loads(body)["bundle"]["pending_id"])
    except (ValueError, KeyError, TypeError):
        return ""


@contextmanager
def receiving(receiver: Receiver) -> Iterator[Receiver]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            receiver.handle(self)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.server = server
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.stopping.set()
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(clarion: str, folder: Path, name: str) -> Iterator[tuple[str, int]]:
    """``clarion serve`` on a fresh SQLite file: (base URL, pid)."""
    port = _free_port()
    env = {
        **os.environ,
        "CLARION_DATABASE_URL": f"sqlite:///{folder / f'{name}.db'}",
        "CLARION_PORT": str(port),
        "CLARION_AUTH": "disabled",
        "CLARION_LOG_FORMAT": "json",
        "CLARION_NOTIFY_POLL_S": "0.5",
        "CLARION_OUTBOUND_ALLOW": "127.0.0.1",
    }
    log = (folder / f"{name}.log").open("wb")
    process = subprocess.Popen(
        [clarion, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=folder
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise SystemExit(f"clarion serve exited: see {folder / f'{name}.log'}")
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise SystemExit("clarion serve did not start")
            time.sleep(0.2)
        yield base, process.pid
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _route(http: httpx2.Client, base: str, url: str) -> None:
    response = http.post(
        f"{base}/api/v1/notifications/routes",
        json={"channel": f"webhook:{url}", "events": ["answerable"]},
    )
    if response.status_code != 201:
        raise SystemExit(f"adding a route failed: {response.status_code} {response.text}")


def _ask(http: httpx2.Client, base: str) -> str:
    task = http.post(f"{base}/api/v1/tasks", json={"title": "t"}).json()
    session = http.post(f"{base}/api/v1/tasks/{task['id']}/sessions", json={}).json()
    created = http.post(
        f"{base}/api/v1/clarification/request",
        json={"session_id": session["id"], "context": "", "questions": [QUESTION]},
    )
    if created.status_code != 200:
        raise SystemExit(f"asking failed: {created.status_code} {created.text}")
    return str(created.json()["pending_id"])


def _memory(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in MB."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) // 1024
    return fields["VmRSS"], fields["VmHWM"]


def trickle_phase(clarion: str, folder: Path, args: argparse.Namespace) -> list[str]:
    slow = Receiver("trickle", args.trickle_bytes, args.trickle_interval)
    prompt = Receiver("prompt")
    lines = []
    with (
        receiving(slow),
        receiving(prompt),
        serving(clarion, folder, "trickle") as (base, _),
        httpx2.Client(timeout=30) as http,
    ):
        _route(http, base, slow.url)
        _route(http, base, prompt.url)
        asked: dict[str, float] = {}
        for index in range(args.bundles):
            if index:
                time.sleep(args.spacing)
            asked[_ask(http, base)] = time.perf_counter()
        deadline = time.perf_counter() + args.wait
        while time.perf_counter() < deadline and not set(asked) <= set(prompt.arrivals):
            time.sleep(0.1)
        delays = []
        for number, (pending_id, at) in enumerate(asked.items(), start=1):
            arrived = prompt.arrivals.get(pending_id)
            shown = f"{arrived - at:.1f} s" if arrived else f"> {args.wait:.0f} s (not yet)"
            delays.append(arrived - at if arrived else float("inf"))
            lines.append(f"trickle: question {number}: the other route heard it after {shown}")
        worst = max(delays)
        lines.append(
            "trickle: worst delay of the other route: "
            + (f"{worst:.1f} s" if worst != float("inf") else f"> {args.wait:.0f} s")
            + f" (trickling receiver: 1 byte every {args.trickle_interval:g} s, "
            f"{args.trickle_bytes} bytes)"
        )
    return lines


def huge_phase(clarion: str, folder: Path, args: argparse.Namespace) -> list[str]:
    huge = Receiver("huge")
    with (
        receiving(huge),
        serving(clarion, folder, "huge") as (base, pid),
        httpx2.Client(timeout=30) as http,
    ):
        _route(http, base, huge.url)
        time.sleep(1.0)
        before, _ = _memory(pid)
        _ask(http, base)
        started = time.perf_counter()
        huge.done.wait(args.wait)
        took = time.perf_counter() - started
        time.sleep(args.settle)
        after, peak = _memory(pid)
    return [
        f"huge answer: server RSS {before} MB before, {after} MB after (peak {peak} MB); "
        f"the receiver wrote {huge.sent // (1024 * 1024)} of 400 MB before the server "
        f"hung up or finished ({took:.1f} s)"
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--clarion", required=True, help="the clarion executable to measure")
    parser.add_argument("--bundles", type=int, default=3, help="questions asked (trickle phase)")
    parser.add_argument("--spacing", type=float, default=1.0, help="seconds between questions")
    parser.add_argument("--trickle-bytes", type=int, default=8)
    parser.add_argument("--trickle-interval", type=float, default=5.0)
    parser.add_argument("--wait", type=float, default=75.0, help="longest wait, seconds")
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument(
        "--phase", choices=("all", "trickle", "huge"), default="all", help="what to run"
    )
    args = parser.parse_args(argv)
    args.clarion = str(Path(args.clarion).absolute())  # the servers run in a temporary folder
    with tempfile.TemporaryDirectory(prefix="clarion-abuse-outbound-") as temp:
        folder = Path(temp)
        print(f"clarion: {args.clarion}")
        if args.phase in ("all", "trickle"):
            for line in trickle_phase(args.clarion, folder, args):
                print(line, flush=True)
        if args.phase in ("all", "huge"):
            for line in huge_phase(args.clarion, folder, args):
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
