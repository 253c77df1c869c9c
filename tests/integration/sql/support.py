"""Databases for the SQL tests: a migrated SQLite file per test, and one migrated PostgreSQL
database per test module that is emptied between tests.

Each test's SQLite file is a copy of one migrated once per test process (migrating takes about
0.1 s, a copy a millisecond; several hundred tests take one), so it has exactly the schema and
revision a fresh migration gives.

Creating a PostgreSQL database is quick but dropping one forces a checkpoint (about 1.5 s
here), so the suites share one database per module and delete every row before each test,
which leaves each test exactly the empty, migrated database a fresh one would be.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from clarion.adapters.memory import InProcessLease, InProcessLeases
from clarion.adapters.sql import (
    PostgresLease,
    SqlClaimRepository,
    SqlHostRepository,
    SqlTokenStore,
    create_engine,
    metadata,
    upgrade_database,
)
from clarion.adapters.sql.outbox import entry_values
from clarion.adapters.sql.schema import messages, notification_outbox, task_sessions
from clarion.adapters.system import UuidIds
from clarion.domain.model import ANSWERED, CLARIFICATION_REQUEST
from clarion.domain.notifications import ANSWERABLE, DONE, NewEntry
from clarion.ports.system import IdGenerator
from clarion.ports.testing import ContractWorld, ManualClock, Replica, row_metadata
from tests.postgres_server import admin_connection


@contextmanager
def migrated_postgres_engine(server_url: str) -> Iterator[Engine]:
    """A fresh, migrated PostgreSQL database on the server (dropped afterwards) and its
    engine."""
    name = f"clarion_sql_{uuid.uuid4().hex[:16]}"
    with admin_connection(server_url) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    engine = create_engine(make_url(server_url).set(database=name))
    try:
        upgrade_database(engine)
        yield engine
    finally:
        engine.dispose()
        with admin_connection(server_url) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def migrated_sqlite_engine(directory: Path) -> Iterator[Engine]:
    """A migrated SQLite file ``clarion.db`` in ``directory`` and its engine."""
    path = directory / "clarion.db"
    shutil.copyfile(_migrated_sqlite_file(), path)
    engine = create_engine(f"sqlite:///{path}")
    try:
        yield engine
    finally:
        engine.dispose()


@functools.cache
def _migrated_sqlite_file() -> Path:
    """This process's migrated SQLite file, the template of every test's (deleted at exit)."""
    directory = Path(tempfile.mkdtemp(prefix="clarion-migrated-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    path = directory / "clarion.db"
    upgrade_database(f"sqlite:///{path}")  # its engine is disposed of: the file is complete
    return path


def empty_database(engine: Engine) -> None:
    """Delete every row (children first), keeping the migrated schema."""
    with engine.begin() as connection:
        for table in reversed(metadata.sorted_tables):
            connection.execute(sa.delete(table))


def table_names(engine: Engine) -> list[str]:
    return sa.inspect(engine).get_table_names()


def sql_world(
    engine: Engine,
    *,
    clock: ManualClock | None = None,
    ids: IdGenerator | None = None,
    cleanup: ExitStack | None = None,
) -> ContractWorld:
    """The SQL adapters over one engine, as a contract world. Its replicas (issue #28) hold a
    real :class:`PostgresLease` on PostgreSQL (released by ``cleanup`` at the latest) and an
    in-process lease on SQLite, whose production processes take none."""
    world_clock = clock or ManualClock()
    world_ids = ids or UuidIds()
    in_process = InProcessLeases()

    def replica() -> Replica:
        lease: PostgresLease | InProcessLease
        if engine.dialect.name == "postgresql":
            lease = PostgresLease(engine)
            lease.acquire()
            if cleanup is not None:
                cleanup.callback(lease.release)
        else:
            lease = in_process.lease()
        claims = SqlClaimRepository(engine, world_clock, world_ids, lease=lease)
        return Replica(claims=claims, end=lease.release)

    return ContractWorld(
        host=SqlHostRepository(engine, world_clock, world_ids),
        claims=SqlClaimRepository(engine, world_clock, world_ids),
        tokens=SqlTokenStore(engine, world_clock, world_ids),
        clock=world_clock,
        storage_names=lambda: table_names(engine),
        replica=replica,
    )


def add_resolved_history(engine: Engine, world: ContractWorld, bundles: int) -> None:
    """``bundles`` answered two-question bundles (resolved history) on one old session,
    written with multi-row inserts, then fresh planner statistics (as autovacuum would)."""
    session = world.session()
    turn = world.turn(session.id)
    stamp = world.clock.now()
    rows = []
    for n in range(bundles):
        for index in range(2):
            metadata = row_metadata(f"hist-{n}", question_id=f"q{index + 1}", index=index)
            metadata["status"] = ANSWERED
            rows.append(
                {
                    "id": f"hist-{n}-{index}",
                    "task_session_id": session.id,
                    "task_id": session.task_id,
                    "turn_id": turn.id,
                    "author_type": "agent",
                    "content": "",
                    "type": CLARIFICATION_REQUEST,
                    "metadata": metadata,
                    "created_at": stamp,
                    "updated_at": stamp,
                }
            )
    with engine.begin() as connection:
        connection.execute(sa.insert(messages), rows)
    fresh_statistics(engine)


def add_sessions(engine: Engine, world: ContractWorld, count: int) -> None:
    """``count`` RUNNING sessions of one new task, written in one multi-row insert, then
    fresh planner statistics (as autovacuum would)."""
    task = world.task()
    stamp = world.clock.now()
    rows = [
        {
            "id": f"bulk-{n:06d}",
            "task_id": task.id,
            "state": "RUNNING",
            "created_at": stamp,
            "updated_at": stamp,
        }
        for n in range(count)
    ]
    with engine.begin() as connection:
        connection.execute(sa.insert(task_sessions), rows)
    fresh_statistics(engine)


def add_finished_outbox_history(engine: Engine, world: ContractWorld, count: int) -> None:
    """``count`` delivered outbox entries, written in one multi-row insert, then fresh
    planner statistics."""
    stamp = world.clock.now()
    rows = [
        entry_values(
            NewEntry(
                pending_id="old",
                event=ANSWERABLE,
                due_at=stamp,
                idempotency_key=f"old-{n}",
                route_id="r",
            ),
            f"h{n}",
            stamp,
        )
        | {"status": DONE}
        for n in range(count)
    ]
    with engine.begin() as connection:
        connection.execute(sa.insert(notification_outbox), rows)
    fresh_statistics(engine)


def fresh_statistics(engine: Engine) -> None:
    """The planner statistics autovacuum would gather after a bulk write (SQLite's too)."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql("ANALYZE")
