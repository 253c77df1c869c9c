"""Issue #29 S6: one user with many workspaces must not slow another user's ask on
``/mcp/agent``.

Starts ``clarion serve`` (the executable given by ``--clarion``; SQLite in a temporary folder,
authentication enabled, a free loopback port) with two users, gives the first 66,000 workspaces
of their own, then lets both ask on ``/mcp/agent`` for the first time — the first user first,
the second 0.2 s later — and then once more, the first user five times at once and the second
just after; it prints how long each ask took to reach its user's pending list (``GET
/api/v1/clarification/pending``), i.e. to find or create the caller's "Agents" workspace, a
task, a session and the bundle. The asks are then abandoned.

    python -m benchmarks.abuse.agents --clarion /work/wt/base/.venv/bin/clarion
    python -m benchmarks.abuse.agents --clarion .venv/bin/clarion
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.abuse.lists import database_url, served

WORKSPACES = 66_000
HEAD_START_S = 0.2
CROWDED_ASKS = 5
ASK = "ask_user_question_kandev"
TIMEOUT_S = 300.0


def _cli(clarion: str, folder: Path, *args: str) -> str:
    out = subprocess.run(
        [clarion, *args, "--database-url", database_url(folder)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.stdout.strip().splitlines()[-1]


def create_user(clarion: str, folder: Path, name: str) -> tuple[str, str]:
    user_id = _cli(clarion, folder, "users", "create", name)
    return user_id, _cli(clarion, folder, "tokens", "create", user_id)


def _many_workspaces(folder: Path, owner: str) -> None:
    start = datetime(2020, 1, 1, tzinfo=UTC)
    rows = [
        (
            uuid.uuid4().hex,
            f"project {n}",
            owner,
            (start + timedelta(seconds=n)).replace(tzinfo=None).isoformat(timespec="microseconds"),
        )
        for n in range(WORKSPACES)
    ]
    with sqlite3.connect(folder / "bench.db") as connection:
        connection.executemany(
            "INSERT INTO workspaces (id, name, owner_id, created_at, updated_at)"
            " VALUES (?1, ?2, ?3, ?4, ?4)",
            rows,
        )


async def _ask_until_listed(
    base: str, token: str, label: str, times: dict[str, float], listed: int = 0
) -> None:
    """Ask as ``token``'s user and record how long until more than ``listed`` of its bundles
    are pending."""
    headers = {"Authorization": f"Bearer {token}"}
    started = time.perf_counter()
    question = {
        "id": "q1",
        "title": label,
        "prompt": f"{label}?",
        "options": [{"label": "Yes", "description": "y"}, {"label": "No", "description": "n"}],
    }
    async with (
        httpx2.AsyncClient(headers=headers, timeout=TIMEOUT_S) as http,
        anyio.create_task_group() as tasks,
    ):

        async def ask() -> None:
            async with Client(streamable_http_client(f"{base}/mcp/agent", http_client=http)) as c:
                await c.call_tool(ASK, {"questions": [question]})

        tasks.start_soon(ask)
        with anyio.fail_after(TIMEOUT_S):
            while True:
                response = await http.get(f"{base}/api/v1/clarification/pending")
                if response.status_code == 200 and response.json()["count"] > listed:
                    break
                await anyio.sleep(0.05)
        times[label] = time.perf_counter() - started
        tasks.cancel_scope.cancel()  # the ask is abandoned; its bundle stays pending


async def _race(base: str, crowded: str, other: str) -> dict[str, float]:
    """Round 1: each user's first ask, the crowded one first. Round 2: the crowded user asks
    ``CROWDED_ASKS`` times at once, the other user once more just after."""
    times: dict[str, float] = {}
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask_until_listed, base, crowded, "crowded", times)
        await anyio.sleep(HEAD_START_S)
        tasks.start_soon(_ask_until_listed, base, other, "other", times)
    async with anyio.create_task_group() as tasks:
        for n in range(CROWDED_ASKS):
            tasks.start_soon(_ask_until_listed, base, crowded, f"crowded {n}", times, 1)
        await anyio.sleep(HEAD_START_S)
        tasks.start_soon(_ask_until_listed, base, other, "other again", times, 1)
    return times


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--clarion", required=True, help="the clarion executable to serve")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="clarion-abuse-agents-") as name:
        folder = Path(name)
        crowded_id, crowded = create_user(args.clarion, folder, "crowded")
        _, other = create_user(args.clarion, folder, "other")
        _many_workspaces(folder, crowded_id)
        with served(args.clarion, folder, {"CLARION_AUTH": "enabled"}) as (base, _process):
            times = anyio.run(_race, base, crowded, other)
        print(f"first ask of the user with {WORKSPACES:,} workspaces: {times['crowded']:.2f} s")
        print(f"first ask of another user, {HEAD_START_S} s later: {times['other']:.2f} s")
        print(
            f"another ask of the other user, {HEAD_START_S} s after {CROWDED_ASKS} concurrent "
            f"asks of the crowded one: {times['other again']:.2f} s"
        )


if __name__ == "__main__":
    main()
