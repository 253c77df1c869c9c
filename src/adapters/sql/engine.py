"""The engine factory and the transaction helpers every SQL repository uses.

SQLite (sync pysqlite): WAL, ``synchronous=FULL`` (``NORMAL`` on request: faster commits, but
the last ones can be lost on power loss), a busy timeout and foreign keys on every connection;
a new database file is created readable by its owner only (0600), and SQLite gives its WAL and
shared-memory files the same permissions; the driver's own transaction handling is switched
off so that SQLAlchemy's ``begin`` hook can issue ``BEGIN IMMEDIATE`` for write transactions
(the writer lock is taken up front, so two claims can never both read "pending" and then both
upgrade to write) and a plain deferred ``BEGIN`` for reads (which WAL serves from a snapshot
without blocking).

PostgreSQL: psycopg 3 (``postgresql+psycopg://``), READ COMMITTED; write serialization is
the advisory-lock protocol in :mod:`clarion.adapters.sql.locks`.

Both: a pool of at most :data:`POOL_SIZE` connections, all of them kept once opened. With
SQLAlchemy's default (5 kept plus 10 "overflow" ones closed as soon as they are returned)
every burst above five concurrent store calls connected anew — a connection setup (and, on
PostgreSQL, a new backend process) per store call under load (issue #35).
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, Dialect, Engine, make_url

from clarion.adapters.sql.driver import driver_rows
from clarion.domain.audit_chain import link_hash
from clarion.ports.system import Clock, IdGenerator

DEFAULT_DATABASE_URL = "sqlite:///./clarion.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000
# The SQL function every SQLite connection gets: clarion.domain.audit_chain.link_hash.
SQLITE_LINK_HASH = "clarion_link_hash"
SqliteSynchronous = Literal["FULL", "NORMAL"]
DEFAULT_SQLITE_SYNCHRONOUS: SqliteSynchronous = "FULL"

# At most this many connections per engine, all kept once opened (the same maximum as
# SQLAlchemy's default of 5 plus 10 overflow, without closing the overflow on every return).
POOL_SIZE = 15

_WRITE_OPTION = "clarion_write"
_HOLDS_WRITER = "clarion_holds_sqlite_writer"
_configured: weakref.WeakSet[Dialect] = weakref.WeakSet()


def normalize_url(url: str | URL) -> URL:
    """Parse a database URL; a bare ``postgresql://`` URL gets the psycopg 3 driver."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def create_engine(
    url: str | URL = DEFAULT_DATABASE_URL,
    *,
    sqlite_synchronous: SqliteSynchronous = DEFAULT_SQLITE_SYNCHRONOUS,
    **kwargs: Any,
) -> Engine:
    """An engine configured for Clarion's repositories (see the module docstring).

    SQLite URLs must name a file (``sqlite:///./clarion.db``, ``sqlite:////abs/path.db``):
    concurrent claims need connections that share one database.

    Raises:
        ValueError: for an in-memory SQLite URL or a database other than SQLite/PostgreSQL.
    """
    parsed = normalize_url(url)
    backend = parsed.get_backend_name()
    # Statement parameters carry question and answer text; driver errors must not quote them
    # into logs or messages.
    options = {"hide_parameters": True, "pool_size": POOL_SIZE, "max_overflow": 0, **kwargs}
    if backend == "sqlite":
        if parsed.database in (None, "", ":memory:") or "mode=memory" in str(parsed):
            raise ValueError("Clarion needs a file-backed SQLite database, not :memory:")
        if sqlite_synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"sqlite_synchronous must be FULL or NORMAL: {sqlite_synchronous!r}")
        engine = sa.create_engine(parsed, **options)
        _configure_sqlite(engine, sqlite_synchronous, str(parsed.database))
    elif backend == "postgresql":
        engine = sa.create_engine(parsed, **options)
    else:
        raise ValueError(f"unsupported database backend: {backend!r}")
    _configured.add(engine.dialect)
    return engine


def _create_private_file(database: str) -> None:
    """Create the database file (empty) readable and writable by its owner only, unless it
    exists; SQLite then gives its -wal and -shm files the same mode."""
    if database.startswith("file:"):
        return  # a URI filename: SQLite opens it itself
    try:
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except (FileExistsError, FileNotFoundError):
        return  # there already, or no such folder (SQLite reports that when it connects)


def _configure_sqlite(engine: Engine, synchronous: SqliteSynchronous, database: str) -> None:
    @event.listens_for(engine, "do_connect")
    def _before_connect(*_args: Any) -> None:
        # The file is created on first use, not when the engine is built (building Clarion
        # touches no database), and privately.
        _create_private_file(database)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # None = the driver never opens transactions itself; the "begin" hook does.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute(f"PRAGMA synchronous = {synchronous}")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()
        # The audit chain's link, so a claim appends its record in one statement
        # (clarion.adapters.sql.audit); PostgreSQL computes the same hash with sha256().
        dbapi_connection.create_function(SQLITE_LINK_HASH, 2, link_hash, deterministic=True)

    # Writers of this process queue on a lock instead of in SQLite's busy handler, whose
    # back-off sleeps (1, 2, 5 ... 100 ms) made the tail latency of a burst of answers grow
    # with the number of worker threads. The lock is held from BEGIN IMMEDIATE until the
    # connection returns to the pool (after COMMIT or ROLLBACK). Other processes on the same
    # file still meet the busy timeout.
    writer = threading.Lock()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        if not connection.get_execution_options().get(_WRITE_OPTION, False):
            driver_rows(connection, "BEGIN")
            return
        if not writer.acquire(timeout=SQLITE_BUSY_TIMEOUT_MS / 1000):
            raise TimeoutError("timed out waiting for the SQLite writer lock")
        connection.info[_HOLDS_WRITER] = True
        try:
            driver_rows(connection, "BEGIN IMMEDIATE")
        except BaseException:
            connection.info.pop(_HOLDS_WRITER, None)
            writer.release()
            raise

    @event.listens_for(engine.pool, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        if record is not None and record.info.pop(_HOLDS_WRITER, False):
            writer.release()


def check_engine(engine: Engine) -> Engine:
    """Return ``engine`` if it came from :func:`create_engine`.

    Raises:
        ValueError: otherwise — an unconfigured SQLite engine would let two claims interleave.
    """
    if engine.dialect not in _configured:
        raise ValueError("build the engine with clarion.adapters.sql.create_engine()")
    return engine


def autovacuum_disabled(engine: Engine) -> bool:
    """True when PostgreSQL will never gather planner statistics for the bundle rows on its
    own: ``autovacuum`` is off on the server, or ``autovacuum_enabled`` on
    ``task_session_messages``. Without statistics the planner guesses that the partial
    indexes over pending rows are nearly empty and may claim an answer by reading every
    pending row instead of probing its pending id (issue #35: 4.9 ms instead of 0.9 ms per
    claim with 5,000 pending, and growing with them). False on SQLite, whose planner does
    not depend on gathered statistics for these lookups."""
    if engine.dialect.name != "postgresql":
        return False
    with engine.connect() as connection:
        return bool(
            connection.exec_driver_sql(
                "SELECT current_setting('autovacuum')::boolean IS NOT TRUE"
                " OR coalesce((SELECT option_value::boolean IS NOT TRUE"
                "  FROM pg_class, pg_options_to_table(reloptions)"
                "  WHERE pg_class.oid = to_regclass('task_session_messages')"
                "   AND option_name = 'autovacuum_enabled'), false)"
            ).scalar_one()
        )


def for_writes(engine: Engine) -> Engine:
    """The same engine (same pool) whose transactions are write transactions: on SQLite
    they begin with ``BEGIN IMMEDIATE``. Repositories keep one and call ``.begin()`` on it."""
    return engine.execution_options(**{_WRITE_OPTION: True})


class SqlRepository:
    """The base of the SQL repositories: the checked engine for reads and its write twin
    (:func:`for_writes`) for every ``.begin()`` that writes."""

    def __init__(self, engine: Engine) -> None:
        self._engine = check_engine(engine)
        self._writes = for_writes(engine)


class SqlStore(SqlRepository):
    """The base of the repositories that keep ids and timestamps of their own (host, tokens,
    notifications, groups): a :class:`SqlRepository` with the injected clock and id
    generator."""

    def __init__(self, engine: Engine, clock: Clock, ids: IdGenerator) -> None:
        super().__init__(engine)
        self._clock = clock
        self._ids = ids


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """One write transaction (``BEGIN IMMEDIATE`` on SQLite); commits on success."""
    with for_writes(engine).begin() as connection:
        yield connection


@contextmanager
def snapshot_transaction(engine: Engine) -> Iterator[Connection]:
    """One read-only transaction whose statements all see one snapshot, on PostgreSQL too
    (``REPEATABLE READ``: the snapshot is taken at its first statement; a read-only
    transaction never meets a serialization failure). For reads that combine facts which
    must agree, such as a bundle's rows and its session's turns."""
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            connection.execution_options(isolation_level="REPEATABLE READ")
        with connection.begin():
            yield connection


@contextmanager
def read_transaction(engine: Engine) -> Iterator[Connection]:
    """One read-only transaction: every statement inside sees one consistent snapshot on
    SQLite; on PostgreSQL (READ COMMITTED) each statement sees the latest commits.

    On PostgreSQL that is exactly what statements on an autocommit connection see, so the
    reads run on one (its isolation level is restored when the connection goes back to the
    pool): no ``BEGIN`` and ``COMMIT`` round trips around them — two of the three round trips
    of a one-statement read, four times per ``tasks/get`` poll (issue #35). Reads that must
    agree with each other use :func:`snapshot_transaction`."""
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            connection.execution_options(isolation_level="AUTOCOMMIT")
            yield connection
            return
        with connection.begin():
            yield connection


def read_with_parent(
    engine: Engine,
    child: sa.Table,
    parent: sa.Table,
    *,
    key: str,
    prefix: str,
    by: str,
    value: Any,
) -> sa.RowMapping | None:
    """The one ``child`` row whose ``by`` column is ``value``, with the columns of the
    ``parent`` row its ``key`` column references (``parent.id``) as ``<prefix><column>`` — all
    None when there is no such parent."""
    return read_one(engine, _with_parent(child, parent, key, prefix, by), {"value": value})


@functools.cache
def _with_parent(child: sa.Table, parent: sa.Table, key: str, prefix: str, by: str) -> Any:
    """:func:`read_with_parent`'s statement, built once per shape (issue #35: building and
    cache-keying the join cost about 0.4 ms of CPU on every task authorization)."""
    alias = parent.alias(prefix.rstrip("_"))
    return (
        sa.select(child, *(column.label(prefix + column.name) for column in alias.c))
        .select_from(child.outerjoin(alias, alias.c.id == child.c[key]))
        .where(child.c[by] == sa.bindparam("value"))
    )


def read_one(
    engine: Engine, statement: sa.Select[Any], parameters: dict[str, Any] | None = None
) -> sa.RowMapping | None:
    """The first row ``statement`` selects (bound with ``parameters``; None when none), read
    in a transaction of its own."""
    with read_transaction(engine) as connection:
        return connection.execute(statement, parameters or {}).mappings().first()


def insert_or_skip(connection: Connection, table: sa.Table, key: str) -> Any:
    """``INSERT … ON CONFLICT (key) DO NOTHING`` into ``table``, in ``connection``'s dialect;
    the caller binds the values.

    Raises:
        ValueError: the database is neither SQLite nor PostgreSQL.
    """
    dialect = connection.dialect.name
    statement: Any
    if dialect == "postgresql":
        statement = postgresql.insert(table)
    elif dialect == "sqlite":
        statement = sqlite.insert(table)
    else:  # pragma: no cover - Clarion runs on SQLite and PostgreSQL only
        raise ValueError(f"unsupported database {dialect}")
    return statement.on_conflict_do_nothing(index_elements=[key])
