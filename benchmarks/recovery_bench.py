"""Issue #28 item 4: the time from ``kill -9`` of the replica delivering an answer to the
bundle being answerable again on another replica, on PostgreSQL.

Each run starts two ``clarion serve`` processes (the executable ``--clarion`` names) on a
fresh PostgreSQL database: A with ``CLARION_TEST_CRASH_AFTER=claim`` (it SIGKILLs itself
right after its claim commits, leaving the bundle "in delivery") and B. A bundle is asked and
answered on A; A dies; the clock starts when A's process has exited and stops when B's
pending list shows the bundle again (polled every 50 ms), bounded by ``--limit`` seconds.

Before issue #28 only the grace period ends such a delivery: up to
``CLARION_RECOVERY_GRACE_S`` + ``CLARION_RECOVERY_INTERVAL_S`` (120 + 60 s by default). After
it, B sees that A's liveness lease is free and rolls the delivery back at its next recovery
round (every 2 s by default). ``--grace``/``--interval`` set those two variables for both
processes (unset: each version's defaults).

    .venv/bin/python -m benchmarks.recovery_bench --clarion .venv/bin/clarion [--runs 3]
    .venv/bin/python -m benchmarks.recovery_bench --clarion /work/wt/base/.venv/bin/clarion \\
        --runs 1 --grace 120 --interval 60 --limit 200
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

from benchmarks.scratch import scratch_postgres
from tests.sockets import free_port

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
STARTUP_S = 60.0
POLL_S = 0.05
QUESTION = {
    "id": "go",
    "title": "Go",
    "prompt": "Go ahead?",
    "options": [{"label": "Yes", "description": "go"}, {"label": "No", "description": "stop"}],
}
ANSWER = {"answers": [{"question_id": "go", "selected_options": ["q1_opt1"]}]}


class Server:
    """One ``clarion serve`` process on a loopback port, its output in ``log``."""

    def __init__(self, clarion: str, url: str, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.log = log
        environment = {**os.environ, "CLARION_AUTH": "disabled", **env}
        command = [clarion, "serve", "--database-url", url, "--port", str(self.port)]
        with log.open("w") as output:
            self.process = subprocess.Popen(
                command, env=environment, stdout=output, stderr=subprocess.STDOUT
            )

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, http: httpx2.Client) -> None:
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if http.get(f"{self.base}/healthz").status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"clarion serve did not start:\n{self.log.read_text()}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)


def _post(http: httpx2.Client, url: str, body: dict[str, Any]) -> dict[str, Any]:
    response = http.post(url, json=body)
    response.raise_for_status()
    found: dict[str, Any] = response.json()
    return found


def _pending(http: httpx2.Client, base: str) -> set[str]:
    listed = http.get(f"{base}/api/v1/clarification/pending", params={"limit": 100}).json()
    return {bundle["pending_id"] for bundle in listed["bundles"]}


def one_run(clarion: str, server_url: str, env: dict[str, str], limit: float) -> float | None:
    """Seconds from A's death to the bundle answerable on B; None when not within ``limit``."""
    with (
        scratch_postgres(server_url) as url,
        tempfile.TemporaryDirectory() as folder,
        httpx2.Client(timeout=30) as http,
    ):
        a = Server(clarion, url, {**env, "CLARION_TEST_CRASH_AFTER": "claim"}, Path(folder, "a"))
        b: Server | None = None
        try:
            a.wait_ready(http)  # A migrates the new database before B starts
            b = Server(clarion, url, env, Path(folder, "b"))
            b.wait_ready(http)
            task = _post(http, f"{a.base}/api/v1/tasks", {"title": "t"})
            session = _post(http, f"{a.base}/api/v1/tasks/{task['id']}/sessions", {})
            asked = {"session_id": session["id"], "context": "", "questions": [QUESTION]}
            pending_id = _post(http, f"{a.base}/api/v1/clarification/request", asked)["pending_id"]
            with contextlib.suppress(httpx2.TransportError):  # A dies under the answer
                http.post(f"{a.base}/api/v1/clarification/{pending_id}/respond", json=ANSWER)
            if a.process.wait(30) != -signal.SIGKILL:
                raise RuntimeError(f"A was not killed at its claim:\n{a.log.read_text()}")
            killed = time.monotonic()
            while time.monotonic() - killed < limit:
                if pending_id in _pending(http, b.base):
                    return time.monotonic() - killed
                time.sleep(POLL_S)
            return None
        finally:
            a.kill()
            if b is not None:
                b.kill()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clarion", required=True, help="the clarion executable to measure")
    parser.add_argument(
        "--server-url", default=os.environ.get("CLARION_TEST_POSTGRES_URL", DEFAULT_URL)
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=float, default=200.0, help="seconds to wait at most")
    parser.add_argument("--grace", help="CLARION_RECOVERY_GRACE_S for both processes")
    parser.add_argument("--interval", help="CLARION_RECOVERY_INTERVAL_S for both processes")
    args = parser.parse_args(argv)
    env: dict[str, str] = {}
    if args.grace is not None:
        env["CLARION_RECOVERY_GRACE_S"] = args.grace
    if args.interval is not None:
        env["CLARION_RECOVERY_INTERVAL_S"] = args.interval
    settings = " ".join(f"{k}={v}" for k, v in env.items()) or "each version's defaults"
    print(f"clarion: {args.clarion}")
    print(f"settings: {settings}; runs: {args.runs}; limit: {args.limit:.0f} s")
    figures: list[float] = []
    for number in range(1, args.runs + 1):
        seconds = one_run(args.clarion, args.server_url, env, args.limit)
        shown = f"{seconds:.2f} s" if seconds is not None else f"not within {args.limit:.0f} s"
        print(f"run {number}: kill -9 -> answerable on the other replica: {shown}", flush=True)
        if seconds is not None:
            figures.append(seconds)
    if figures:
        print(
            f"median {statistics.median(figures):.2f} s, max {max(figures):.2f} s "
            f"({len(figures)}/{args.runs} answerable within the limit)"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
