"""Park many concurrent asking agents in one process, then answer them all.

Prints, for the in-memory, SQLite and PostgreSQL repositories (PostgreSQL when
``--postgres-url`` or ``CLARION_TEST_POSTGRES_URL`` names a server: a scratch database, with the
LISTEN/NOTIFY live delivery a PostgreSQL deployment runs):

- memory per waiting ask: Python heap growth (tracemalloc) from parking every ask, divided
  by the number of asks — the asking task, its waiter entry and event, its progress pinger,
  plus (in-memory only) the durable rows themselves; SQLite keeps rows outside the Python heap;
- answer-to-wake latency p50/p99: from the moment an answerer calls ``resolve`` to the moment
  the blocked ``ask`` returns to its agent. Closed loop by default (``--answerers`` answering
  concurrently, each as soon as its last answer woke its agent: the latency under saturation);
  with ``--rate R``, open loop: ``--answered N`` answers (default 1,000) start R per second
  whatever the earlier ones are doing, while the rest stay parked (the latency of an answer
  reaching a hot waiter at that offered load); the asks still parked are answered afterwards,
  unmeasured;
- answers per second (closed loop: the capacity; open loop: the rate achieved).

Between parking and answering, the database is brought to the state a live one would be in
(:func:`benchmarks.sql_bench.settle`): PostgreSQL gets the planner statistics autovacuum
would have gathered while the asks arrived, SQLite's WAL is checkpointed. A scratch database
filled in minutes has none of its own, and a server run with ``autovacuum = off`` (as on the
development machine) never gathers them: without them PostgreSQL claimed each answer by
scanning every pending row (issue #35, tenth pass). ``--stale-statistics`` skips the step to
show that case.

Targets: under 20 KiB per waiting ask (issue 4); answer-to-wake p99 under 25 ms on one node
with 10,000 parked, SQLite ``FULL`` and PostgreSQL (issue 35).

    .venv/bin/python -m benchmarks.waiters_bench [--asks 10000] [--answerers 8] \
        [--only memory|sqlite|postgresql] [--sqlite-synchronous full,normal] \
        [--rate 25 --answered 1000] [--postgres-url URL] [--stale-statistics]
"""

from __future__ import annotations

import argparse
import functools
import gc
import logging
import os
import statistics
import time
import tracemalloc

import anyio
import attrs
import structlog
from sqlalchemy.engine import Engine

from benchmarks.scratch import postgres_engine, sqlite_engine
from benchmarks.sql_bench import settle
from clarion.adapters.events import InProcessEventBus
from clarion.adapters.memory import InMemoryClaimRepository, InMemoryHostRepository, InMemoryStore
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.postgres_notify import postgres_waiters_and_events
from clarion.adapters.resume import OutboxResumeDispatcher
from clarion.adapters.sql import (
    SqlClaimRepository,
    SqlHostRepository,
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
from clarion.ports.events import Event, EventPublisher
from clarion.ports.host import HostRepository
from clarion.ports.waiters import Waiters

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
    return _build(claims, host, threads, waiters, events), waiters, events


def _build(
    claims: ClaimRepository,
    host: HostRepository,
    threads: int,
    waiters: Waiters,
    events: EventPublisher,
) -> Services:
    return build_services(
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


@attrs.frozen
class Answering:
    """How the parked asks are answered: closed loop by ``answerers`` (``rate`` 0), or open
    loop, ``answered`` of them at ``rate`` per second."""

    answerers: int
    rate: float = 0.0
    answered: int = 1_000
    # Bring the database to a live one's state between parking and answering (settle).
    settled: bool = True


@attrs.frozen
class Figures:
    """One store's run, as printed."""

    name: str
    parked_s: float
    kib_per_ask: float
    timed: int
    p50_ms: float
    p99_ms: float
    answers_per_s: float


async def _run(
    name: str,
    services: Services,
    waiters: InMemoryWaiters,
    events: ParkedCounter,
    host: HostRepository,
    asks: int,
    answering: Answering,
    engine: Engine | None = None,
) -> Figures:
    workspace = host.create_workspace("bench")
    task = host.create_task("bench", workspace.id)
    sessions = [host.create_session(task.id)[0].id for _ in range(asks)]
    gc.collect()

    woke_at: dict[str, float] = {}
    woken: dict[str, anyio.Event] = {}

    async def no_progress(count: int) -> None:
        return None

    async def agent(session_id: str) -> None:
        result = await services.asking.ask(
            AGENT, session_id, DRAFTS, "", on_progress=no_progress, progress_interval=3600
        )
        woke_at[result.pending_id] = time.perf_counter()
        woken.setdefault(result.pending_id, anyio.Event()).set()

    latencies: list[float] = []

    async def answer(pending_id: str, *, timed: bool) -> None:
        submitted = time.perf_counter()
        await services.resolver.resolve(AGENT, pending_id, ANSWER, surface=Surface.REST)
        # The agent's ask returns after its session-state write; wait for that.
        await woken.setdefault(pending_id, anyio.Event()).wait()
        if timed:
            latencies.append(woke_at[pending_id] - submitted)

    async def closed_loop(queue: list[str], *, timed: bool) -> None:
        async def answerer() -> None:
            while queue:
                await answer(queue.pop(), timed=timed)

        async with anyio.create_task_group() as answerers:
            for _ in range(answering.answerers):
                answerers.start_soon(answerer)

    async def open_loop(queue: list[str]) -> None:
        began = time.perf_counter()
        async with anyio.create_task_group() as answers:
            for index, pending_id in enumerate(queue):
                await anyio.sleep(max(0.0, began + index / answering.rate - time.perf_counter()))
                answers.start_soon(functools.partial(answer, pending_id, timed=True))

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
        if engine is not None and answering.settled:
            await anyio.to_thread.run_sync(settle, engine)
        queue = [entry.pending_id for entry in waiters._entries.values()]
        measured = min(answering.answered, asks) if answering.rate else asks
        timing = time.perf_counter()
        if answering.rate:
            await open_loop(queue[:measured])
        else:
            await closed_loop(queue, timed=True)
        answer_s = time.perf_counter() - timing
        await closed_loop(queue[measured:], timed=False)
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    how = (
        f"{answering.rate:g}/s offered, {measured} timed"
        if answering.rate
        else f"{answering.answerers} answerers"
    )
    if engine is not None and not answering.settled:
        how += ", stale statistics"
    figures = Figures(name, parked_s, per_ask / 1024, len(latencies), p50, p99, measured / answer_s)
    print(
        f"{name:<10} asks={asks} parked in {parked_s:6.1f}s | "
        f"memory per waiting ask {figures.kib_per_ask:6.2f} KiB | "
        f"answer-to-wake p50 {p50:6.2f} ms p99 {p99:6.2f} ms | "
        f"{figures.answers_per_s:7.0f} answers/s ({how}, "
        f"{services.limiter.total_tokens:g} threads)"
    )
    return figures


def _memory(asks: int, answering: Answering, threads: int) -> Figures:
    store = InMemoryStore()
    clock, ids = SystemClock(), UuidIds()
    host = InMemoryHostRepository(store, clock, ids)
    services, waiters, events = _services(InMemoryClaimRepository(store, clock, ids), host, threads)
    return anyio.run(_run, "in-memory", services, waiters, events, host, asks, answering)


def _sqlite(
    asks: int, answering: Answering, threads: int, synchronous: SqliteSynchronous
) -> Figures:
    with sqlite_engine(synchronous=synchronous) as engine:
        upgrade_database(engine)
        clock, ids = SystemClock(), UuidIds()
        host = SqlHostRepository(engine, clock, ids)
        claims = SqlClaimRepository(engine, clock, ids)
        services, waiters, events = _services(claims, host, threads)
        name = f"sqlite/{synchronous.lower()}"
        return anyio.run(_run, name, services, waiters, events, host, asks, answering, engine)


def _postgres(server_url: str, asks: int, answering: Answering, threads: int) -> Figures:
    """One node on a scratch PostgreSQL database, with the live delivery a PostgreSQL
    deployment runs (``CLARION_LIVE_DELIVERY=auto``): the local waiters behind LISTEN/NOTIFY."""
    with postgres_engine(server_url) as engine:
        upgrade_database(engine)
        clock, ids = SystemClock(), UuidIds()
        host = SqlHostRepository(engine, clock, ids)
        claims = SqlClaimRepository(engine, clock, ids)
        local_waiters, local_events = InMemoryWaiters(), ParkedCounter()
        live = postgres_waiters_and_events(
            engine, claims=claims, local_waiters=local_waiters, local_events=local_events
        )
        services = _build(claims, host, threads, live.waiters, live.events)

        async def run() -> Figures:
            async with live:
                return await _run(
                    "postgresql",
                    services,
                    local_waiters,
                    local_events,
                    host,
                    asks,
                    answering,
                    engine,
                )

        return anyio.run(run)


def main(argv: list[str] | None = None) -> list[Figures]:
    """Run the chosen stores in turn; their figures, as printed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=10_000)
    parser.add_argument("--answerers", type=int, default=8, help="closed loop (no --rate)")
    parser.add_argument("--rate", type=float, default=0.0, help="answers/s offered (open loop)")
    parser.add_argument("--answered", type=int, default=1_000, help="answers timed with --rate")
    parser.add_argument("--threads", type=int, default=4, help="worker threads for the ports")
    parser.add_argument("--only", choices=["memory", "sqlite", "postgresql"], default=None)
    parser.add_argument(
        "--sqlite-synchronous",
        default="full",
        help="comma-separated SQLite synchronous modes to run in turn (full, normal)",
    )
    parser.add_argument("--postgres-url", default=os.environ.get("CLARION_TEST_POSTGRES_URL", ""))
    parser.add_argument(
        "--stale-statistics",
        action="store_true",
        help="answer without first gathering the planner statistics a live database has",
    )
    args = parser.parse_args(argv)
    if args.rate < 0 or args.answered < 1 or args.answerers < 1:
        parser.error("--rate must be at least 0, --answered and --answerers at least 1")
    modes: list[SqliteSynchronous] = []
    for mode in args.sqlite_synchronous.split(","):
        if mode.strip().upper() not in ("FULL", "NORMAL"):
            parser.error(f"--sqlite-synchronous: full or normal, not {mode!r}")
        modes.append("FULL" if mode.strip().upper() == "FULL" else "NORMAL")
    answering = Answering(
        args.answerers, args.rate, args.answered, settled=not args.stale_statistics
    )
    # A benchmark is an entry point: keep per-event info logs out of the measurement.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    runs: list[Figures] = []
    if args.only in (None, "memory"):
        runs.append(_memory(args.asks, answering, args.threads))
    if args.only in (None, "sqlite"):
        for mode in modes:  # one fresh database each, in turn (an A/B in one sitting)
            runs.append(_sqlite(args.asks, answering, args.threads, mode))
    if args.only in (None, "postgresql"):
        if args.postgres_url:
            runs.append(_postgres(args.postgres_url, args.asks, answering, args.threads))
        else:
            print("postgresql: skipped (no --postgres-url or CLARION_TEST_POSTGRES_URL)")
    return runs


if __name__ == "__main__":
    main()
