"""Durable-store benchmark for SQLite and PostgreSQL (see docs/performance.md).

Prints, per database:

- claim throughput: ``SqlClaimRepository.complete_active_bundle`` calls per second, and the
  same figure as a ratio of a bare single-row conditional ``UPDATE`` + commit on the same
  database in the same run (target >= 0.5);
- list latency: the median time of one ``list_active_bundles`` page of 50 with the same
  1,000 pending bundles on top of 10k and of 1M resolved message rows (target: the large
  figure within 2x of the small one).

Run::

    .venv/bin/python -m benchmarks.sql_bench                      # SQLite and PostgreSQL
    .venv/bin/python -m benchmarks.sql_bench --large-history 100000 --claims 300   # quicker
    # SQLite claim throughput with synchronous=FULL (the default) against NORMAL, same run:
    .venv/bin/python -m benchmarks.sql_bench --backends sqlite --claims-only \
        --sqlite-synchronous full,normal,full,normal

PostgreSQL is used when ``--postgres-url`` or ``CLARION_TEST_POSTGRES_URL`` names a server;
a scratch database is created there and dropped afterwards.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa
import structlog
from sqlalchemy.engine import Engine, make_url

from clarion.adapters.sql import SqlClaimRepository, create_engine, upgrade_database
from clarion.adapters.sql.schema import (
    messages,
    task_session_turns,
    task_sessions,
    tasks,
    workspaces,
)
from clarion.adapters.system import SystemClock, UuidIds
from clarion.domain.listing import ListQuery, Visibility
from clarion.domain.model import ANSWERED, CLARIFICATION_REQUEST, Answer, Option, Question
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


@contextmanager
def sqlite_engine(directory: Path, synchronous: str = "FULL") -> Iterator[Engine]:
    engine = create_engine(
        f"sqlite:///{directory / 'bench.db'}",
        sqlite_synchronous="NORMAL" if synchronous == "NORMAL" else "FULL",
    )
    try:
        yield engine
    finally:
        engine.dispose()


@contextmanager
def postgres_engine(admin_url: str) -> Iterator[Engine]:
    admin = make_url(admin_url)
    name = f"clarion_bench_{uuid.uuid4().hex[:12]}"
    params: dict[str, Any] = {
        "host": admin.host or "127.0.0.1",
        "port": admin.port or 5432,
        "user": admin.username or "postgres",
        "password": admin.password,
        "dbname": admin.database or "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**params) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    engine = create_engine(admin.set(database=name))
    try:
        yield engine
    finally:
        engine.dispose()
        with psycopg.connect(**params) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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


def median_list_ms(claims: SqlClaimRepository, query: ListQuery, repeats: int) -> float:
    claims.list_active_bundles(query)
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        page = claims.list_active_bundles(query)
        timings.append(time.perf_counter() - started)
        if len(page.bundles) != query.limit:
            raise RuntimeError(f"short page: {len(page.bundles)}")
    return statistics.median(timings) * 1000


def bench_list(
    engine: Engine, pending: int, small: int, large: int, repeats: int
) -> tuple[float, float, float]:
    """(seconds to load history, median ms with ``small`` rows, median ms with ``large``)."""
    loader = Loader(engine)
    workspace_ids = [loader.new_id("ws") for _ in range(WORKSPACES)]
    loader.insert(
        workspaces,
        [
            {
                "id": w,
                "name": w,
                "owner_id": "owner" if i % 2 else "",
                "created_at": EPOCH,
                "updated_at": EPOCH,
            }
            for i, w in enumerate(workspace_ids)
        ],
    )
    history_owners = loader.sessions(HISTORY_SESSIONS, workspace_ids)
    pending_owners = loader.sessions(PENDING_SESSIONS, workspace_ids)
    rows_per_bundle = len(QUESTIONS)
    loader.bundles(small // rows_per_bundle, history_owners, answered=True)
    loader.bundles(pending, pending_owners, answered=False)
    settle(engine)
    claims = SqlClaimRepository(engine, SystemClock(), UuidIds())
    # A scoped caller who sees half the workspaces (visibility is inside the query, L1a).
    query = ListQuery(visibility=Visibility.only(workspace_ids[1::2]), limit=50)
    small_ms = median_list_ms(claims, query, repeats)
    started = time.perf_counter()
    loader.bundles((large - small) // rows_per_bundle, history_owners, answered=True)
    settle(engine)
    load_seconds = time.perf_counter() - started
    large_ms = median_list_ms(claims, query, repeats)
    return load_seconds, small_ms, large_ms


def run(name: str, make: Callable[[], Any], args: argparse.Namespace) -> None:
    with make() as engine:
        upgrade_database(engine)
        claim_rate, bare_rate = bench_claims(engine, args.claims)
    print(
        f"{name}: claim {claim_rate:,.0f}/s, bare conditional UPDATE+commit {bare_rate:,.0f}/s,"
        f" ratio {claim_rate / bare_rate:.2f} (target >= 0.5)",
        flush=True,
    )
    if args.claims_only:
        return
    with make() as engine:
        upgrade_database(engine)
        load_seconds, small_ms, large_ms = bench_list(
            engine, args.pending, args.small_history, args.large_history, args.list_repeats
        )
    print(
        f"{name}: list page of 50 over {args.pending:,} pending bundles: "
        f"{small_ms:.2f} ms median with {args.small_history:,} resolved rows, "
        f"{large_ms:.2f} ms with {args.large_history:,} (x{large_ms / small_ms:.2f}, "
        f"target <= 2; history loaded in {load_seconds:.0f} s)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--postgres-url", default=os.environ.get("CLARION_TEST_POSTGRES_URL", ""))
    parser.add_argument("--claims", type=int, default=1000, help="claims (and bare updates) timed")
    parser.add_argument("--pending", type=int, default=1000, help="pending bundles listed over")
    parser.add_argument("--small-history", type=int, default=10_000)
    parser.add_argument("--large-history", type=int, default=1_000_000)
    parser.add_argument("--list-repeats", type=int, default=50)
    parser.add_argument(
        "--sqlite-synchronous",
        default="full",
        help="comma-separated SQLite synchronous modes to run in turn (full, normal)",
    )
    parser.add_argument("--claims-only", action="store_true", help="skip the list benchmark")
    args = parser.parse_args(argv)
    # A script, like the CLI, may configure logging: keep per-claim info lines off stdout.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    print(f"python {sys.version.split()[0]}, SQLAlchemy {sa.__version__}", flush=True)
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as scratch:
            counter = iter(range(100))

            for mode in (m.strip().upper() for m in args.sqlite_synchronous.split(",")):

                def make_sqlite(mode: str = mode) -> Any:
                    directory = Path(scratch) / str(next(counter))
                    directory.mkdir()
                    return sqlite_engine(directory, mode)

                run(f"sqlite (synchronous={mode})", make_sqlite, args)
    if "postgresql" in backends:
        if not args.postgres_url:
            print("postgresql: skipped (no --postgres-url / CLARION_TEST_POSTGRES_URL)")
        else:
            run("postgresql", lambda: postgres_engine(args.postgres_url), args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
