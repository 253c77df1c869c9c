"""What the event stream costs the server per frame it sends (issue #35).

One ``clarion serve`` (``memory://``, auth disabled) on a free loopback port. The bench creates
and answers ``--answers`` bundles over REST, one after another, in rounds that alternate between
no event stream open and ``--streams`` open ``GET /api/v1/events`` streams, and reads the
server's CPU (``/proc``) over each round. Every answer publishes the same events whether anyone
listens or not, so what the streams add, divided by the frames they received, is the server's
CPU per frame sent — the fan-out's whole path: the subscription, the visibility check, the
stream's response and every HTTP layer its writes cross::

    .venv/bin/python -m benchmarks.stream_bench [--streams 30] [--answers 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import anyio
import attrs
import httpx2

from benchmarks.load_bench import ANSWER, QUESTIONS, _free_port, _session, serving
from benchmarks.replicas_bench import _proc_cpu


@attrs.define
class Round:
    streams: int
    answers: int
    cpu_s: float
    frames: int
    elapsed_s: float


@attrs.define
class Listeners:
    """The open streams of one round: how many said they are connected, frames received."""

    expected: int
    opened: int = 0
    frames: int = 0
    ready: anyio.Event = attrs.Factory(anyio.Event)


async def _hold(base_url: str, listeners: Listeners, *, task_status: Any) -> None:
    async with (
        httpx2.AsyncClient(base_url=base_url, timeout=None) as http,
        http.stream("GET", "/api/v1/events") as response,
    ):
        response.raise_for_status()
        task_status.started()
        async for line in response.aiter_lines():
            if line.startswith(": connected"):
                listeners.opened += 1
                if listeners.opened == listeners.expected:
                    listeners.ready.set()
            elif line.startswith("event: "):
                listeners.frames += 1


async def _round(
    base_url: str, pid: int, sessions: list[str], *, streams: int, answers: int
) -> Round:
    listeners = Listeners(streams)
    async with (
        httpx2.AsyncClient(base_url=base_url, timeout=30) as http,
        anyio.create_task_group() as holders,
    ):
        for _ in range(streams):
            await holders.start(_hold, base_url, listeners)
        if streams:
            with anyio.fail_after(30):
                await listeners.ready.wait()
        await anyio.sleep(0.5)
        cpu = _proc_cpu(pid)
        started = time.monotonic()
        for _ in range(answers):
            body = {"session_id": sessions.pop(), "questions": QUESTIONS, "context": "stream"}
            created = await http.post("/api/v1/clarification/request", json=body)
            created.raise_for_status()
            pending_id = created.json()["pending_id"]
            answered = await http.post(f"/api/v1/clarification/{pending_id}/respond", json=ANSWER)
            answered.raise_for_status()
        # Let the last answer's frames reach every stream before the CPU is read.
        await anyio.sleep(0.5)
        cpu_s = _proc_cpu(pid) - cpu
        elapsed = time.monotonic() - started
        holders.cancel_scope.cancel()
    return Round(streams, answers, cpu_s, listeners.frames, elapsed)


async def _run(args: argparse.Namespace) -> list[Round]:
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "CLARION_DATABASE_URL": "memory://",
        "CLARION_HOST": "127.0.0.1",
        "CLARION_PORT": str(port),
        "CLARION_AUTH": "disabled",
        "CLARION_LOG_FORMAT": "json",
        "CLARION_MAX_EVENT_STREAMS": str(args.streams),
        "CLARION_MAX_CONNECTIONS_PER_CLIENT": str(args.streams + 20),
    }
    rounds: list[Round] = []
    async with serving(env, base_url) as server:
        async with httpx2.AsyncClient(base_url=base_url, timeout=30) as http:
            workspace = await http.post("/api/v1/workspaces", json={"name": "streams"})
            workspace.raise_for_status()
            # A session per answer, made beforehand: an asker's session holds one question at
            # a time, and making them is not what is measured.
            sessions = [
                await _session(http, workspace.json()["id"])
                for _ in range(50 + 2 * args.rounds * args.answers)
            ]
        # A warm-up round, not counted: first calls import and fill caches.
        await _round(base_url, server.pid, sessions, streams=args.streams, answers=50)
        for _ in range(args.rounds):
            for streams in (0, args.streams):
                rounds.append(
                    await _round(
                        base_url, server.pid, sessions, streams=streams, answers=args.answers
                    )
                )
    return rounds


def report(rounds: list[Round], streams: int) -> str:
    quiet = [r.cpu_s / r.answers for r in rounds if r.streams == 0]
    loud = [r for r in rounds if r.streams]
    frames = statistics.median(r.frames / r.answers for r in loud)
    per_answer = [r.cpu_s / r.answers for r in loud]
    per_frame = [
        (r.cpu_s / r.answers - q) / (r.frames / r.answers) for r, q in zip(loud, quiet, strict=True)
    ]
    lines = [
        f"{len(loud)} rounds of {loud[0].answers} answers with {streams} streams open, "
        f"alternating with rounds with none",
        f"frames per answer, all streams: {frames:.1f} ({frames / streams:.2f} per stream)",
        "server CPU per answer, no stream: "
        + ", ".join(f"{1000 * v:.2f}" for v in quiet)
        + f" ms (median {1000 * statistics.median(quiet):.2f})",
        f"server CPU per answer, {streams} streams: "
        + ", ".join(f"{1000 * v:.2f}" for v in per_answer)
        + f" ms (median {1000 * statistics.median(per_answer):.2f})",
        "server CPU per frame sent: "
        + ", ".join(f"{1e6 * v:.1f}" for v in per_frame)
        + f" µs (median {1e6 * statistics.median(per_frame):.1f})",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--streams", type=int, default=30)
    parser.add_argument("--answers", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rounds = anyio.run(_run, args)
    print(report(rounds, args.streams))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
