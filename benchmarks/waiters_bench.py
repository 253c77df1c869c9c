"""Park many concurrent asking agents in one process, then answer them all.

Prints, for the in-memory and the SQLite repositories:

- memory per waiting ask: Python heap growth (tracemalloc) from parking every ask, divided
  by the number of asks — the asking task, its waiter entry and event, its progress pinger,
  plus (in-memory only) the durable rows themselves; SQLite keeps rows outside the Python heap;
- answer-to-wake latency p50/p99: from the moment an answerer calls ``resolve`` to the moment
  the blocked ``ask`` returns to its agent, with ``--answerers`` answering concurrently;
- answers per second.

Targets (issue 4): under 20 KiB per waiting ask; p99 under 50 ms on SQLite.

    .venv/bin/python benchmarks/waiters_bench.py [--asks 10000] [--answerers 8] \
        [--sqlite-synchronous full,normal]
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import anyio
import structlog

from clarion.adapters.events import InProcessEventBus
from clarion.adapters.memory import InMemoryClaimRepository, InMemoryHostRepository, InMemoryStore
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.resume import OutboxResumeDispatcher
from clarion.adapters.sql import (
    SqlClaimRepository,
    SqlHostRepository,
    create_engine,
    upgrade_database,
)
from clarion.adapters.sql.engine import SqliteSynchronous
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.services import Services, build_services
from clarion.domain.model import Answer, Identity, Outcome
from clarion.domain.questions import OptionDraft, QuestionDraft
from clarion.domain.resolved_by import Surface
from clarion.ports.claims import ClaimRepository
from clarion.ports.events import Event
from clarion.ports.host import HostRepository

AGENT = Identity.internal()
DRAFTS = (
    QuestionDraft(
        prompt="Deploy now?",
        options=(OptionDraft("Yes", "ship it"), OptionDraft("No", "hold")),
    ),
)
ANSWER = Outcome.answer(Answer("q1", ("q1_opt1",)))


class ParkedCounter(InProcessEventBus):
    """The event fan-out, counting sessions that reached WAITING_FOR_INPUT — the last step of
    an ask before it is parked with its rows durable."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting_sessions = 0

    def publish(self, event: Event) -> None:
        if event.kind == "session.updated" and event.data.get("state") == "WAITING_FOR_INPUT":
            self.waiting_sessions += 1
        super().publish(event)


def _services(
    claims: ClaimRepository, host: HostRepository, threads: int
) -> tuple[Services, InMemoryWaiters, ParkedCounter]:
    waiters = InMemoryWaiters()
    events = ParkedCounter()
    services = build_services(
        claims=claims,
        host=host,
        authorizer=HostTaskAuthorizer(host),
        waiters=waiters,
        dispatcher=OutboxResumeDispatcher(claims),
        events=events,
        clock=SystemClock(),
        ids=UuidIds(),
        limiter=anyio.CapacityLimiter(threads),
    )
    return services, waiters, events


async def _run(
    name: str,
    services: Services,
    waiters: InMemoryWaiters,
    events: ParkedCounter,
    host: HostRepository,
    asks: int,
    answerers: int,
) -> None:
    workspace = host.create_workspace("bench")
    task = host.create_task("bench", workspace.id)
    sessions = [host.create_session(task.id)[0].id for _ in range(asks)]
    gc.collect()

    woke_at: dict[str, float] = {}
    woken: dict[str, anyio.Event] = {}
    pending_by_session: dict[str, str] = {}

    async def no_progress(count: int) -> None:
        return None

    async def agent(session_id: str) -> None:
        result = await services.asking.ask(
            AGENT, session_id, DRAFTS, "", on_progress=no_progress, progress_interval=3600
        )
        woke_at[result.pending_id] = time.perf_counter()
        woken.setdefault(result.pending_id, anyio.Event()).set()

    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    async with anyio.create_task_group() as agents:
        for session_id in sessions:
            agents.start_soon(agent, session_id)
        # Parked = every ask's rows are durable, its session says WAITING_FOR_INPUT, and it
        # waits on its event.
        while events.waiting_sessions < asks:
            await anyio.sleep(0.05)
        assert len(waiters) == asks
        parked_s = time.perf_counter() - started
        gc.collect()
        per_ask = (tracemalloc.get_traced_memory()[0] - baseline) / asks
        tracemalloc.stop()
        for entry in waiters._entries.values():
            pending_by_session[entry.session_id] = entry.pending_id

        latencies: list[float] = []
        queue = list(pending_by_session.values())

        async def answerer() -> None:
            while queue:
                pending_id = queue.pop()
                submitted = time.perf_counter()
                await services.resolver.resolve(AGENT, pending_id, ANSWER, surface=Surface.REST)
                # The agent's ask returns after its session-state write; wait for that.
                await woken.setdefault(pending_id, anyio.Event()).wait()
                latencies.append(woke_at[pending_id] - submitted)

        answering = time.perf_counter()
        async with anyio.create_task_group() as answering_tasks:
            for _ in range(answerers):
                answering_tasks.start_soon(answerer)
        answer_s = time.perf_counter() - answering
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    print(
        f"{name:<10} asks={asks} parked in {parked_s:6.1f}s | "
        f"memory per waiting ask {per_ask / 1024:6.2f} KiB | "
        f"answer-to-wake p50 {p50:6.2f} ms p99 {p99:6.2f} ms | "
        f"{asks / answer_s:7.0f} answers/s ({answerers} answerers, "
        f"{services.limiter.total_tokens:g} threads)"
    )


def _memory(asks: int, answerers: int, threads: int) -> Callable[[], object]:
    store = InMemoryStore()
    clock, ids = SystemClock(), UuidIds()
    host = InMemoryHostRepository(store, clock, ids)
    services, waiters, events = _services(InMemoryClaimRepository(store, clock, ids), host, threads)
    return lambda: anyio.run(_run, "in-memory", services, waiters, events, host, asks, answerers)


def _sqlite(
    directory: Path, asks: int, answerers: int, threads: int, synchronous: SqliteSynchronous
) -> Callable[[], object]:
    engine = create_engine(f"sqlite:///{directory / 'bench.db'}", sqlite_synchronous=synchronous)
    upgrade_database(engine)
    clock, ids = SystemClock(), UuidIds()
    host = SqlHostRepository(engine, clock, ids)
    services, waiters, events = _services(SqlClaimRepository(engine, clock, ids), host, threads)
    name = f"sqlite/{synchronous.lower()}"
    return lambda: anyio.run(_run, name, services, waiters, events, host, asks, answerers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=10_000)
    parser.add_argument("--answerers", type=int, default=8)
    parser.add_argument("--threads", type=int, default=4, help="worker threads for the ports")
    parser.add_argument("--only", choices=["memory", "sqlite"], default=None)
    parser.add_argument(
        "--sqlite-synchronous",
        default="full",
        help="comma-separated SQLite synchronous modes to run in turn (full, normal)",
    )
    args = parser.parse_args()
    modes: list[SqliteSynchronous] = []
    for mode in args.sqlite_synchronous.split(","):
        if mode.strip().upper() not in ("FULL", "NORMAL"):
            parser.error(f"--sqlite-synchronous: full or normal, not {mode!r}")
        modes.append("FULL" if mode.strip().upper() == "FULL" else "NORMAL")
    # A benchmark is an entry point: keep per-event info logs out of the measurement.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.only in (None, "memory"):
        _memory(args.asks, args.answerers, args.threads)()
    if args.only in (None, "sqlite"):
        for mode in modes:  # one fresh database each, in turn (an A/B in one sitting)
            with tempfile.TemporaryDirectory() as directory:
                _sqlite(Path(directory), args.asks, args.answerers, args.threads, mode)()


if __name__ == "__main__":
    main()
