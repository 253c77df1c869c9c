"""A mixed load against one ``clarion serve`` on loopback: no 5xx, bounded memory (issue #14).

``--clients`` clients (200) run for ``--seconds`` (60) and then stop by themselves, each in one
role, round robin:

- list: ``GET /api/v1/clarification/pending`` again and again;
- answer: create a bundle in its own session, then answer it over ``respond``;
- wait: create a bundle, block in ``GET …/wait`` while answering it from a second request,
  and check the wait returned the answer;
- events: hold ``GET /api/v1/events`` open for a few seconds, then reopen it.

The server is a separate process (``clarion serve`` on a temporary SQLite database, auth
disabled, so every client is the one synthetic identity and the per-identity limits are the
whole server's: answers 429 are counted apart, they are the limits at work). It prints every
status seen, the number of 5xx and transport errors, and the server's peak resident memory
(``VmHWM``). Only loopback is used.

    .venv/bin/python -m benchmarks.load_bench [--clients 200] [--seconds 60]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx2

QUESTIONS = [
    {
        "id": "q1",
        "title": "Load",
        "prompt": "Which option?",
        "options": [
            {"label": "One", "description": "The first"},
            {"label": "Two", "description": "The second"},
        ],
    }
]
ANSWER = {"answers": [{"question_id": "q1", "selected_options": ["q1_opt1"]}]}
EXPECTED_WAIT = [{"question_id": "q1", "selected_options": ["q1_opt1"]}]
ROLES = ("list", "answer", "wait", "events")


@attrs.define
class Tally:
    """What the clients saw."""

    statuses: collections.Counter[int] = attrs.Factory(collections.Counter)
    by_role: collections.Counter[str] = attrs.Factory(collections.Counter)
    transport_errors: int = 0
    wrong_answers: int = 0
    events_received: int = 0

    def record(self, role: str, status: int) -> None:
        self.statuses[status] += 1
        self.by_role[role] += 1

    @property
    def server_errors(self) -> int:
        return sum(count for status, count in self.statuses.items() if status >= 500)


async def _session(http: httpx2.AsyncClient, workspace_id: str) -> str:
    task = await http.post("/api/v1/tasks", json={"title": "load", "workspace_id": workspace_id})
    task.raise_for_status()
    session = await http.post(f"/api/v1/tasks/{task.json()['id']}/sessions", json={})
    session.raise_for_status()
    session_id = session.json()["id"]
    assert isinstance(session_id, str)
    return session_id


async def _create(http: httpx2.AsyncClient, tally: Tally, role: str, session_id: str) -> str:
    body = {"session_id": session_id, "questions": QUESTIONS, "context": role}
    response = await http.post("/api/v1/clarification/request", json=body)
    tally.record(role, response.status_code)
    return str(response.json().get("pending_id", "")) if response.status_code == 200 else ""


async def _client(
    index: int, base_url: str, workspace_id: str, deadline: float, tally: Tally
) -> None:
    role = ROLES[index % len(ROLES)]
    timeout = httpx2.Timeout(30, read=60)
    async with httpx2.AsyncClient(base_url=base_url, timeout=timeout) as http:
        session_id = ""
        while role in ("answer", "wait") and not session_id:
            # A loaded machine may time a connection out before the run starts: count it and
            # retry, rather than losing the whole run to one client's setup.
            if time.monotonic() >= deadline:
                return
            try:
                session_id = await _session(http, workspace_id)
            except httpx2.TransportError:
                tally.transport_errors += 1
                await anyio.sleep(0.1)
        while time.monotonic() < deadline:
            try:
                await _step(http, tally, role, session_id, deadline)
            except httpx2.TransportError:
                tally.transport_errors += 1
                await anyio.sleep(0.1)


async def _step(
    http: httpx2.AsyncClient, tally: Tally, role: str, session_id: str, deadline: float
) -> None:
    if role == "list":
        response = await http.get("/api/v1/clarification/pending", params={"limit": 50})
        tally.record(role, response.status_code)
    elif role == "answer":
        pending_id = await _create(http, tally, role, session_id)
        if pending_id:
            answered = await http.post(f"/api/v1/clarification/{pending_id}/respond", json=ANSWER)
            tally.record(role, answered.status_code)
    elif role == "wait":
        pending_id = await _create(http, tally, role, session_id)
        if not pending_id:
            await anyio.sleep(0.2)
            return
        results: dict[str, httpx2.Response] = {}
        async with anyio.create_task_group() as tasks:

            async def wait() -> None:
                results["wait"] = await http.get(f"/api/v1/clarification/{pending_id}/wait")

            tasks.start_soon(wait)
            await anyio.sleep(0.05)
            answered = await http.post(f"/api/v1/clarification/{pending_id}/respond", json=ANSWER)
            tally.record(role, answered.status_code)
        waited = results["wait"]
        tally.record(role, waited.status_code)
        if waited.status_code == 200 and waited.json().get("answers") != EXPECTED_WAIT:
            tally.wrong_answers += 1
    else:
        hold = min(3.0, max(0.0, deadline - time.monotonic()))
        async with http.stream("GET", "/api/v1/events") as response:
            tally.record(role, response.status_code)
            if response.status_code != 200:
                await anyio.sleep(1.0)
                return
            with anyio.move_on_after(hold):
                async for line in response.aiter_lines():
                    if line.startswith("event:"):
                        tally.events_received += 1


async def run_load(base_url: str, *, clients: int, seconds: float, workspace_id: str = "") -> Tally:
    """Run the mix against ``base_url`` (auth disabled) and return what the clients saw."""
    async with httpx2.AsyncClient(base_url=base_url, timeout=30) as http:
        if not workspace_id:
            created = await http.post("/api/v1/workspaces", json={"name": "load"})
            created.raise_for_status()
            workspace_id = created.json()["id"]
    tally = Tally()
    deadline = time.monotonic() + seconds
    async with anyio.create_task_group() as tasks:
        for index in range(clients):
            tasks.start_soon(_client, index, base_url, workspace_id, deadline, tally)
    return tally


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _rss_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


async def _measure(pid: int, peak: list[int], stop: anyio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], _rss_kib(pid, "VmRSS"))
        with anyio.move_on_after(0.5):
            await stop.wait()


@contextlib.asynccontextmanager
async def serving(env: dict[str, str], base_url: str) -> AsyncIterator[subprocess.Popen[bytes]]:
    """``clarion serve`` with ``env``, once ``base_url`` answers ``/healthz``; stopped
    (SIGTERM, then killed after 30 s) on the way out."""
    clarion = Path(sys.executable).with_name("clarion")
    server = subprocess.Popen(
        [str(clarion), "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        async with httpx2.AsyncClient(base_url=base_url) as http:
            with anyio.fail_after(60):
                while True:
                    try:
                        if (await http.get("/healthz")).status_code == 200:
                            break
                    except httpx2.TransportError:
                        pass
                    await anyio.sleep(0.2)
        yield server
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


async def main(clients: int, seconds: float) -> int:
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as directory:
        env = {
            **os.environ,
            "CLARION_DATABASE_URL": f"sqlite:///{directory}/load.db",
            "CLARION_HOST": "127.0.0.1",
            "CLARION_PORT": str(port),
            "CLARION_AUTH": "disabled",
            "CLARION_LOG_FORMAT": "json",
            # Every client connects from 127.0.0.1, one address (#29 S1 limits it to 100),
            # and a waiting client holds two connections.
            "CLARION_MAX_CONNECTIONS_PER_CLIENT": str(2 * clients + 10),
        }
        async with serving(env, base_url) as server:
            start_rss = _rss_kib(server.pid, "VmRSS")
            peak = [start_rss]
            stop = anyio.Event()
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_measure, server.pid, peak, stop)
                started = time.monotonic()
                tally = await run_load(base_url, clients=clients, seconds=seconds)
                elapsed = time.monotonic() - started
                stop.set()
            high_water = _rss_kib(server.pid, "VmHWM")
    total = sum(tally.statuses.values())
    print(f"{clients} clients for {seconds:.0f} s (ran {elapsed:.1f} s) against {base_url}")
    print(f"requests: {total} ({total / elapsed:.0f}/s); by role: {dict(tally.by_role)}")
    print(f"statuses: {dict(sorted(tally.statuses.items()))}")
    print(f"5xx: {tally.server_errors}; transport errors: {tally.transport_errors}")
    print(f"waits that returned something other than the answer: {tally.wrong_answers}")
    print(f"events received by stream clients: {tally.events_received}")
    print(
        f"server RSS: {start_rss / 1024:.0f} MiB at start, peak {peak[0] / 1024:.0f} MiB "
        f"sampled, VmHWM {high_water / 1024:.0f} MiB"
    )
    return 1 if tally.server_errors or tally.transport_errors else 0


def _arguments(argv: list[str] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = _arguments()
    sys.exit(anyio.run(main, arguments.clients, arguments.seconds))
