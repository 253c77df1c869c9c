"""Durable-store benchmark for SQLite and PostgreSQL (see docs/performance.md).

Prints, per database (figures only; nothing is asserted):

- claims: ``SqlClaimRepository.complete_active_bundle`` calls per second, and the ratio to a
  bare single-row conditional ``UPDATE`` + commit on the same database in the same run;
- list: the median and p95 of one list page of 50 for a scoped caller (visibility resolved
  by ``HostTaskAuthorizer`` as ``Listing`` does) at each of ``--pending-sizes`` pending
  bundles with a fixed history, the ratio largest / smallest, and the ratio to a raw
  ``SELECT`` of the 50 oldest pending rows through an index (the physical floor);
- scoped: the same page for a caller owning 10 vs ``--many-workspaces`` workspaces;
- create: ``Asking.create`` in a session holding 1 vs ``--session-active`` active bundles;
- history (only with ``--parts ...,history``): the page over 1,000 pending bundles with
  ``--history`` and then ``--large-history`` resolved rows.

Run::

    .venv/bin/python -m benchmarks.sql_bench                     # SQLite and PostgreSQL
    .venv/bin/python -m benchmarks.sql_bench --json after.json --label after
    .venv/bin/python -m benchmarks.sql_bench --parts list --pending-sizes 100,1000000
    # SQLite claim throughput with synchronous=FULL (the default) against NORMAL, same run:
    .venv/bin/python -m benchmarks.sql_bench --backends sqlite --parts claims \
        --sqlite-synchronous full,normal,full,normal

PostgreSQL is used when ``--postgres-url`` or ``CLARION_TEST_POSTGRES_URL`` names a server;
a scratch database is created there and dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import psycopg
import sqlalchemy as sa
import structlog
from sqlalchemy.engine import Engine

from benchmarks.scratch import postgres_engine, sqlite_engine
from clarion.adapters.events import InProcessEventBus
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.resume import OutboxResumeDispatcher
from clarion.adapters.sql import (
    SqlClaimRepository,
    SqlHostRepository,
    upgrade_database,
)
from clarion.adapters.sql.metadata_sql import is_clarification, is_pendingish
from clarion.adapters.sql.schema import (
    messages,
    task_session_turns,
    task_sessions,
    tasks,
    workspaces,
)
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.services import build_services
from clarion.domain.limits import Limits
from clarion.domain.listing import ListQuery
from clarion.domain.model import (
    ANSWERED,
    CLARIFICATION_REQUEST,
    Answer,
    Identity,
    Option,
    Question,
)
from clarion.domain.questions import OptionDraft, QuestionDraft, questions_digest
from clarion.domain.rows import clarification_metadata, response_metadata

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
CHUNK = 5_000
HISTORY_SESSIONS = 200
PENDING_SESSIONS = 100
WORKSPACES = 10

bare = sa.Table(
    "bench_bare_rows",
    sa.MetaData(),
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
)


def question(number: int) -> Question:
    return Question(
        id=f"q{number}",
        prompt=f"Question {number}?",
        title=f"Title {number}",
        options=(
            Option(option_id=f"q{number}_opt1", label="Yes", description="Do it"),
            Option(option_id=f"q{number}_opt2", label="No", description="Do not"),
        ),
    )


QUESTIONS = (question(1), question(2))
KEYED = "bundle_created_at" in messages.c
FACTS = "bundle_complete" in messages.c
DIGEST = questions_digest(QUESTIONS)


class Loader:
    """Bulk rows written with multi-row inserts straight into the tables."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.clock = EPOCH
        self.counter = 0

    def stamp(self) -> datetime:
        self.clock += timedelta(microseconds=7)
        return self.clock

    def new_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter:09d}"

    def insert(self, table: sa.Table, rows: list[dict[str, Any]]) -> None:
        with self.engine.begin() as connection:
            for start in range(0, len(rows), CHUNK):
                connection.execute(sa.insert(table), rows[start : start + CHUNK])

    def sessions(self, count: int, workspace_ids: list[str]) -> list[tuple[str, str, str]]:
        """``count`` RUNNING sessions, one task each, each with one turn: (task, session, turn)."""
        made = []
        task_rows, session_rows, turn_rows = [], [], []
        for index in range(count):
            now = self.stamp()
            task_id, session_id, turn_id = (self.new_id(p) for p in ("task", "ses", "turn"))
            workspace_id = workspace_ids[index % len(workspace_ids)] if index % 7 else ""
            task_rows.append(
                {
                    "id": task_id,
                    "workspace_id": workspace_id,
                    "title": "t",
                    "created_at": now,
                    "updated_at": now,
                }
            )
            session_rows.append(
                {
                    "id": session_id,
                    "task_id": task_id,
                    "state": "RUNNING",
                    "is_primary": True,
                    "agent_token_hash": "",
                    "created_at": now,
                    "updated_at": now,
                }
            )
            turn_rows.append(
                {
                    "id": turn_id,
                    "task_session_id": session_id,
                    "task_id": task_id,
                    "started_at": now,
                    "completed_at": None,
                    "created_at": now,
                    "updated_at": now,
                }
            )
            made.append((task_id, session_id, turn_id))
        self.insert(tasks, task_rows)
        self.insert(task_sessions, session_rows)
        self.insert(task_session_turns, turn_rows)
        return made

    def bundle_rows(
        self, pending_id: str, owner: tuple[str, str, str], *, answered: bool
    ) -> list[dict[str, Any]]:
        task_id, session_id, turn_id = owner
        rows = []
        first = self.clock + timedelta(microseconds=7)
        for index, q in enumerate(QUESTIONS):
            metadata = clarification_metadata(
                pending_id=pending_id, question=q, index=index, total=len(QUESTIONS), context=""
            )
            if answered:
                metadata["status"] = ANSWERED
                metadata["response"] = response_metadata(
                    Answer(question_id=q.id, selected_options=(f"{q.id}_opt1",))
                )
            now = self.stamp()
            rows.append(
                {
                    "id": self.new_id("msg"),
                    "task_session_id": session_id,
                    "task_id": task_id,
                    "turn_id": turn_id,
                    "author_type": "agent",
                    "content": q.prompt,
                    "type": CLARIFICATION_REQUEST,
                    "metadata": metadata,
                    "created_at": now,
                    "updated_at": now,
                }
            )
            if KEYED:  # the derived bundle keys the repositories write (issue 15)
                rows[-1].update(
                    bundle_created_at=first, bundle_pending_id=pending_id, bundle_digest=DIGEST
                )
            if FACTS:  # and, since migration 0010, its M5 task id and L16
                rows[-1].update(bundle_task_id=task_id, bundle_complete=True)
        return rows

    def bundles(
        self, count: int, owners: list[tuple[str, str, str]], *, answered: bool
    ) -> list[str]:
        pending_ids, batch = [], []
        for index in range(count):
            pending_id = self.new_id("pend" if not answered else "hist")
            pending_ids.append(pending_id)
            batch.extend(
                self.bundle_rows(pending_id, owners[index % len(owners)], answered=answered)
            )
            if len(batch) >= 50 * CHUNK:
                self.insert(messages, batch)
                batch = []
        self.insert(messages, batch)
        return pending_ids


def settle(engine: Engine) -> None:
    """Bring a bulk-loaded database to the state a live one would be in: PostgreSQL gets the
    statistics autovacuum would gather; SQLite's WAL is checkpointed, as its automatic
    checkpoints would have done over a history written in small transactions."""
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("VACUUM ANALYZE")
        return
    with engine.connect() as connection:
        # The driver connection is in autocommit mode (see clarion.adapters.sql.engine), so
        # this runs outside any transaction, as a checkpoint must.
        driver = connection.connection.driver_connection
        assert driver is not None
        driver.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def bench_claims(engine: Engine, count: int) -> tuple[float, float]:
    """(claims per second, bare conditional UPDATE+commit per second)."""
    loader = Loader(engine)
    owners = loader.sessions(PENDING_SESSIONS, [""])
    pending_ids = loader.bundles(count, owners, answered=False)
    bare.create(engine)
    with engine.begin() as connection:
        connection.execute(sa.insert(bare), [{"id": i, "version": 0} for i in range(count)])
    settle(engine)
    claims = SqlClaimRepository(engine, SystemClock(), UuidIds())
    responses = {
        q.id: Answer(question_id=q.id, selected_options=(f"{q.id}_opt1",)) for q in QUESTIONS
    }

    def claim(index: int) -> None:
        result = claims.complete_active_bundle(pending_ids[index], ANSWERED, responses)
        if not result.claimed:
            raise RuntimeError(f"claim {index} lost")

    def bare_update(index: int) -> None:
        with engine.begin() as connection:
            changed = connection.execute(
                sa.update(bare)
                .where(bare.c.id == index, bare.c.version == 0)
                .values(version=bare.c.version + 1)
            ).rowcount
        if changed != 1:
            raise RuntimeError(f"bare update {index} lost")

    warm = min(20, count // 10)
    for index in range(warm):  # connections, statement caches, plans
        claim(index)
        bare_update(index)
    # Alternate one claim and one bare update, so load from other processes on a shared
    # machine falls on both figures alike.
    claim_seconds = bare_seconds = 0.0
    for index in range(warm, count):
        started = time.perf_counter()
        claim(index)
        middle = time.perf_counter()
        bare_update(index)
        claim_seconds += middle - started
        bare_seconds += time.perf_counter() - middle
    timed = count - warm
    return timed / claim_seconds, timed / bare_seconds


def timings_ms(action: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """(median, p95) in ms of ``repeats`` calls of ``action`` after one warm-up call."""
    action()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    p95 = samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]
    return statistics.median(samples), p95


def listing(engine: Engine) -> tuple[SqlClaimRepository, HostTaskAuthorizer]:
    claims = SqlClaimRepository(engine, SystemClock(), UuidIds())
    host = SqlHostRepository(engine, SystemClock(), UuidIds())
    return claims, HostTaskAuthorizer(host)


def list_page(
    claims: SqlClaimRepository, authorizer: HostTaskAuthorizer, identity: Identity
) -> Callable[[], Any]:
    """What ``Listing`` does per call: resolve the caller's visibility, run the page query."""

    def action() -> None:
        query = ListQuery(visibility=authorizer.visibility(identity), limit=50)
        page = claims.list_active_bundles(query)
        if len(page.bundles) != 50:
            raise RuntimeError(f"short page: {len(page.bundles)}")

    return action


def raw_floor(engine: Engine) -> Callable[[], Any]:
    """The physical floor of one page: the 50 oldest pending clarification rows, whole, read
    through an index made for exactly that (created here, benchmark only)."""
    condition = sa.and_(is_clarification(messages), is_pendingish(messages))
    index = sa.Index(
        "bench_ix_pending_created",
        messages.c.created_at,
        sqlite_where=condition,
        postgresql_where=condition,
    )
    index.create(engine)
    settle(engine)
    statement = sa.select(messages).where(condition).order_by(messages.c.created_at).limit(50)

    def action() -> None:
        with engine.connect() as connection:
            rows = connection.execute(statement).all()
        if len(rows) != 50:
            raise RuntimeError(f"short floor: {len(rows)}")

    return action


def workspace_rows(ids: list[str], owner: str) -> list[dict[str, Any]]:
    return [
        {"id": w, "name": w, "owner_id": owner, "created_at": EPOCH, "updated_at": EPOCH}
        for w in ids
    ]


class ListWorld:
    """The list measurement's database: ten workspaces (half of them someone else's, so the
    scoped caller sees the other half), a fixed resolved history, and a pending backlog grown
    in place by :meth:`grow`."""

    def __init__(self, engine: Engine, args: argparse.Namespace) -> None:
        self.engine, self.args = engine, args
        self.loader = Loader(engine)
        self.workspace_ids = [self.loader.new_id("ws") for _ in range(WORKSPACES)]
        owned = workspace_rows(self.workspace_ids[0::2], "someone-else")
        self.loader.insert(workspaces, owned + workspace_rows(self.workspace_ids[1::2], ""))
        history_owners = self.loader.sessions(HISTORY_SESSIONS, self.workspace_ids)
        self.pending_owners = self.loader.sessions(PENDING_SESSIONS, self.workspace_ids)
        self.loader.bundles(args.history // len(QUESTIONS), history_owners, answered=True)
        self.loaded = 0
        claims, authorizer = listing(engine)
        self.page = list_page(claims, authorizer, Identity.user("bench-user"))

    def grow(self, size: int) -> None:
        """Pending bundles up to ``size``, then settle. Each growth lands on sessions of its
        own, at most --bundles-per-session each (default 10: the per-session limit a server
        enforces by default, so 100,000 waiting bundles mean at least 10,000 sessions and
        tasks); with 0 every bundle goes to the same PENDING_SESSIONS sessions (up to 1,000
        each)."""
        if self.args.bundles_per_session:
            new_sessions = -(-(size - self.loaded) // self.args.bundles_per_session)
            self.pending_owners = self.loader.sessions(new_sessions, self.workspace_ids)
        self.loader.bundles(size - self.loaded, self.pending_owners, answered=False)
        self.loaded = size
        settle(self.engine)


def bench_list_sizes(
    engine: Engine, args: argparse.Namespace, make: Callable[[], Any]
) -> dict[str, Any]:
    """List page of 50 (median, p95) as the pending backlog grows; history fixed. Then, at
    the largest backlog, the page against the raw floor and against the same page on a twin
    database holding the smallest backlog (``make`` makes it), each pair timed alternately."""
    world = ListWorld(engine, args)
    figures: dict[str, Any] = {"pending": {}, "bundles_per_session": args.bundles_per_session}
    for size in sorted(args.pending_sizes):
        world.grow(size)
        repeats = args.list_repeats if size <= 10_000 else max(5, args.list_repeats // 5)
        median, p95 = timings_ms(world.page, repeats)
        figures["pending"][str(size)] = {"median_ms": median, "p95_ms": p95}
    floor = raw_floor(engine)
    floor_median, floor_p95 = timings_ms(floor, args.list_repeats)
    figures["raw_floor"] = {"median_ms": floor_median, "p95_ms": floor_p95}
    # The page ÷ floor ratio from calls that alternate one by one at the largest backlog, so
    # load from other processes falls on both alike (timed apart, it swung 3.2-8.7x).
    page_samples, floor_samples = alternating_ms(world.page, floor, args.list_repeats)
    figures["page_vs_floor"] = {
        "page_median_ms": statistics.median(page_samples),
        "floor_median_ms": statistics.median(floor_samples),
    }
    # Largest ÷ smallest backlog the same way: the sizes above are timed one after the other,
    # minutes apart, and on a shared machine their ratio moved by 2x between runs.
    with make() as twin_engine:
        upgrade_database(twin_engine)
        twin = ListWorld(twin_engine, args)
        twin.grow(min(args.pending_sizes))
        large_samples, small_samples = alternating_ms(world.page, twin.page, args.list_repeats)
    figures["largest_vs_smallest"] = {
        "largest_median_ms": statistics.median(large_samples),
        "smallest_median_ms": statistics.median(small_samples),
    }
    return figures


def alternating_ms(
    first: Callable[[], Any], second: Callable[[], Any], repeats: int
) -> tuple[list[float], list[float]]:
    """``repeats`` timings in ms of each action, calling them in turn (after one warm-up each)."""
    first()
    second()
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for action, timed in zip((first, second), samples, strict=True):
            started = time.perf_counter()
            action()
            timed.append((time.perf_counter() - started) * 1000)
    return samples


def bench_history(engine: Engine, args: argparse.Namespace) -> dict[str, Any]:
    """List page of 50 over ``--pending-for-history`` pending bundles with a small and then a
    large resolved history (the page must not follow the history)."""
    loader = Loader(engine)
    workspace_ids = [loader.new_id("ws") for _ in range(WORKSPACES)]
    owned = workspace_rows(workspace_ids[0::2], "someone-else")
    loader.insert(workspaces, owned + workspace_rows(workspace_ids[1::2], ""))
    history_owners = loader.sessions(HISTORY_SESSIONS, workspace_ids)
    pending_owners = loader.sessions(PENDING_SESSIONS, workspace_ids)
    loader.bundles(args.history // len(QUESTIONS), history_owners, answered=True)
    loader.bundles(args.pending_for_history, pending_owners, answered=False)
    settle(engine)
    claims, authorizer = listing(engine)
    page = list_page(claims, authorizer, Identity.user("bench-user"))
    figures: dict[str, Any] = {}
    median, p95 = timings_ms(page, args.list_repeats)
    figures[str(args.history)] = {"median_ms": median, "p95_ms": p95}
    more = (args.large_history - args.history) // len(QUESTIONS)
    loader.bundles(more, history_owners, answered=True)
    settle(engine)
    median, p95 = timings_ms(page, args.list_repeats)
    figures[str(args.large_history)] = {"median_ms": median, "p95_ms": p95}
    return figures


def bench_scoped(engine: Engine, args: argparse.Namespace) -> dict[str, Any]:
    """List page of 50 for a caller who owns few vs many workspaces (same bundles)."""
    loader = Loader(engine)
    mine = [loader.new_id("ws") for _ in range(10)]
    loader.insert(workspaces, workspace_rows(mine, "bench-user"))
    owners = loader.sessions(PENDING_SESSIONS, mine)
    loader.bundles(args.scoped_pending, owners, answered=False)
    settle(engine)
    claims, authorizer = listing(engine)
    page = list_page(claims, authorizer, Identity.user("bench-user"))
    figures: dict[str, Any] = {}
    for count in (10, args.many_workspaces):
        extra = [loader.new_id("ws") for _ in range(count - len(mine))]
        loader.insert(workspaces, workspace_rows(extra, "bench-user"))
        mine += extra
        settle(engine)
        try:
            median, p95 = timings_ms(page, args.list_repeats)
            figures[str(count)] = {"median_ms": median, "p95_ms": p95}
        except (sa.exc.SQLAlchemyError, psycopg.Error) as exc:  # e.g. too many parameters
            figures[str(count)] = {"error": f"{type(exc).__name__}: {str(exc)[:120]}"}
    return figures


def bench_create(engine: Engine, args: argparse.Namespace) -> dict[str, Any]:
    """``Asking.create`` (authorize, deduplicate, write) in a session holding 1 vs N active
    bundles, alternating; every timed create has new questions, so deduplication finds
    nothing."""
    host = SqlHostRepository(engine, SystemClock(), UuidIds())
    claims = SqlClaimRepository(engine, SystemClock(), UuidIds())
    services = build_services(
        claims=claims,
        host=host,
        authorizer=HostTaskAuthorizer(host),
        waiters=InMemoryWaiters(),
        dispatcher=OutboxResumeDispatcher(claims),
        events=InProcessEventBus(),
        clock=SystemClock(),
        ids=UuidIds(),
        # The limits are raised only as far as the bundles measured need (the per-identity one,
        # a whole-server bound for this unscoped caller, keeps its default of 200 up to
        # --session-active 100): the check it costs is part of the figure.
        limits=Limits(
            max_active_bundles_per_session=max(10, args.session_active + args.create_repeats),
            max_active_bundles_per_identity=max(200, args.session_active + 2 * args.create_repeats),
        ),
    )
    task = host.create_task("bench", "")
    counter = iter(range(10**9))

    def drafts() -> tuple[QuestionDraft, ...]:
        n = next(counter)
        options = (OptionDraft("Yes", "do it"), OptionDraft("No", "do not"))
        return (QuestionDraft(prompt=f"Question {n}?", options=options),)

    async def create_many(session_id: str, count: int) -> list[float]:
        samples = []
        for _ in range(count):
            started = time.perf_counter()
            await services.asking.create(Identity.internal(), session_id, drafts(), "")
            samples.append((time.perf_counter() - started) * 1000)
        return samples

    # The two sessions' creates alternate one by one, so load from other processes falls on
    # both alike (run one after the other, the ratio moved by 2x with the machine's load).
    sessions = {active: host.create_session(task.id)[0].id for active in (1, args.session_active)}
    anyio.run(create_many, sessions[args.session_active], args.session_active - 1)

    async def alternate() -> dict[int, list[float]]:
        timed: dict[int, list[float]] = {active: [] for active in sessions}
        for _ in range(args.create_repeats):
            for active, session_id in sessions.items():
                timed[active].extend(await create_many(session_id, 1))
        return timed

    figures: dict[str, Any] = {}
    for active, samples in anyio.run(alternate).items():
        samples.sort()
        p95 = samples[round(0.95 * (len(samples) - 1))]
        figures[str(active)] = {"median_ms": statistics.median(samples), "p95_ms": p95}
    return figures


def fresh(make: Callable[[], Any], work: Callable[[Engine], Any]) -> Any:
    with make() as engine:
        upgrade_database(engine)
        return work(engine)


def ratio(figures: dict[str, Any], top: str, bottom: str) -> str:
    a, b = figures.get(top, {}), figures.get(bottom, {})
    if "median_ms" not in a or "median_ms" not in b:
        return "n/a"
    return f"{a['median_ms'] / b['median_ms']:.2f}"


def show(name: str, label: str, figures: dict[str, Any]) -> None:
    for key, value in figures.items():
        if "median_ms" in value:
            text = f"median {value['median_ms']:.2f} ms, p95 {value['p95_ms']:.2f} ms"
        else:
            text = value["error"]
        print(f"{name}: {label} {key}: {text}", flush=True)


def run(name: str, make: Callable[[], Any], args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if "claims" in args.parts:
        claim_rate, bare_rate = fresh(make, lambda engine: bench_claims(engine, args.claims))
        result["claims"] = {"claim_per_s": claim_rate, "bare_per_s": bare_rate}
        print(
            f"{name}: claim {claim_rate:,.0f}/s, bare conditional UPDATE+commit"
            f" {bare_rate:,.0f}/s, ratio {claim_rate / bare_rate:.2f}",
            flush=True,
        )
    if "list" in args.parts:
        sizes = fresh(make, lambda engine: bench_list_sizes(engine, args, make))
        result["list"] = sizes
        show(name, "list page of 50 (scoped) at pending bundles", sizes["pending"])
        show(name, "raw SELECT of the 50 oldest pending rows", {"floor": sizes["raw_floor"]})
        small, large = str(min(args.pending_sizes)), str(max(args.pending_sizes))
        pending = sizes["pending"]
        floor = pending[large]["median_ms"] / sizes["raw_floor"]["median_ms"]
        paired = sizes["page_vs_floor"]
        print(
            f"{name}: list ratio {large}/{small} pending = {ratio(pending, large, small)}"
            f" (target <= 1.5); page at {large} / raw floor = {floor:.2f} (target <= 4);"
            f" alternating: page {paired['page_median_ms']:.2f} ms / floor"
            f" {paired['floor_median_ms']:.2f} ms ="
            f" {paired['page_median_ms'] / paired['floor_median_ms']:.2f}",
            flush=True,
        )
        twins = sizes["largest_vs_smallest"]
        print(
            f"{name}: list ratio {large}/{small} pending, alternating on two databases:"
            f" {twins['largest_median_ms']:.2f} ms / {twins['smallest_median_ms']:.2f} ms ="
            f" {twins['largest_median_ms'] / twins['smallest_median_ms']:.2f} (target <= 1.5)",
            flush=True,
        )
    if "history" in args.parts:
        history = fresh(make, lambda engine: bench_history(engine, args))
        result["history"] = history
        show(name, "list page of 50, resolved rows", history)
        print(
            f"{name}: history ratio {args.large_history}/{args.history} resolved rows ="
            f" {ratio(history, str(args.large_history), str(args.history))} (target <= 2)",
            flush=True,
        )
    if "scoped" in args.parts:
        scoped = fresh(make, lambda engine: bench_scoped(engine, args))
        result["scoped"] = scoped
        show(name, "list page of 50, caller owning workspaces", scoped)
        print(
            f"{name}: scoped ratio {args.many_workspaces}/10 workspaces ="
            f" {ratio(scoped, str(args.many_workspaces), '10')} (target <= 1.5)",
            flush=True,
        )
    if "create" in args.parts:
        create = fresh(make, lambda engine: bench_create(engine, args))
        result["create"] = create
        show(name, "create a bundle, active bundles in the session", create)
        print(
            f"{name}: create ratio {args.session_active}/1 active ="
            f" {ratio(create, str(args.session_active), '1')} (target <= 1.5)",
            flush=True,
        )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--postgres-url", default=os.environ.get("CLARION_TEST_POSTGRES_URL", ""))
    parser.add_argument(
        "--parts",
        default="claims,list,scoped,create",
        help="any of claims,list,scoped,create,history (history: 1M rows, minutes more)",
    )
    parser.add_argument("--claims", type=int, default=1000, help="claims (and bare updates) timed")
    parser.add_argument(
        "--pending-sizes",
        default="100,10000,100000",
        help="pending bundles the list page is measured at (comma-separated)",
    )
    parser.add_argument("--history", type=int, default=10_000, help="resolved rows, fixed")
    parser.add_argument("--large-history", type=int, default=1_000_000, help="for history")
    parser.add_argument("--pending-for-history", type=int, default=1000)
    parser.add_argument("--list-repeats", type=int, default=50)
    parser.add_argument(
        "--sqlite-synchronous",
        default="full",
        help="comma-separated SQLite synchronous modes to run in turn (full, normal)",
    )
    parser.add_argument(
        "--bundles-per-session",
        type=int,
        default=10,
        help="list: pending bundles per session (default: the default per-session limit);"
        " 0 puts them all on 100 sessions, the layout before this flag",
    )
    parser.add_argument("--scoped-pending", type=int, default=1000)
    parser.add_argument("--many-workspaces", type=int, default=100_000)
    parser.add_argument("--session-active", type=int, default=1000)
    parser.add_argument("--create-repeats", type=int, default=50)
    parser.add_argument("--json", default="", help="also write the figures to this JSON file")
    parser.add_argument("--label", default="", help="a name for this run in the JSON file")
    args = parser.parse_args(argv)
    args.parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    args.pending_sizes = [int(n) for n in args.pending_sizes.split(",") if n.strip()]
    # A script, like the CLI, may configure logging: keep per-claim info lines off stdout.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    print(f"python {sys.version.split()[0]}, SQLAlchemy {sa.__version__}", flush=True)
    figures: dict[str, Any] = {}
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as scratch:
            counter = iter(range(100))

            for mode in (m.strip().upper() for m in args.sqlite_synchronous.split(",")):

                def make_sqlite(mode: str = mode) -> Any:
                    directory = Path(scratch) / str(next(counter))
                    directory.mkdir()
                    return sqlite_engine(directory, mode)

                # The default mode keeps the plain name the chart script reads; repeats and
                # other modes get their own key.
                key = "sqlite" if mode == "FULL" else f"sqlite-{mode.lower()}"
                if key in figures:
                    key = f"{key}-{len(figures)}"
                figures[key] = run(f"sqlite (synchronous={mode})", make_sqlite, args)
    if "postgresql" in backends:
        if not args.postgres_url:
            print("postgresql: skipped (no --postgres-url / CLARION_TEST_POSTGRES_URL)")
        else:
            figures["postgresql"] = run(
                "postgresql", lambda: postgres_engine(args.postgres_url), args
            )
    if args.json:
        document = {"label": args.label, "machine_load": os.getloadavg(), "figures": figures}
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
