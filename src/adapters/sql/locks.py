"""PostgreSQL write serialization (upstream facts §1.7); a no-op on SQLite.

Every write that can change whether a bundle is active — a claim, restore, finalize, expire,
cancel or detach, a session-state change, a new turn or message — first takes the
transaction-scoped advisory lock ``hashtextextended('task-session-turn:' || session_id, 0)``
of each session it touches, in sorted order, in a statement of its own (so the statements
after it see the previous holder's commits). Bundle writes take, in that same statement, the
session rows ``FOR UPDATE`` after their advisory locks, so a terminal-state change and the
claim's non-terminal-session predicate serialize.

On SQLite ``BEGIN IMMEDIATE`` already serializes every write transaction database-wide.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from clarion.adapters.sql.metadata_sql import is_clarification, pending_id_of
from clarion.adapters.sql.schema import messages, task_sessions
from clarion.adapters.sql.statements import PerDialect

LOCK_PREFIX = "task-session-turn:"


@cache
def _advisory_lock() -> sa.Select[Any]:
    key = sa.func.hashtextextended(sa.bindparam("lock_name", type_=sa.Text), 0)
    return sa.select(sa.func.pg_advisory_xact_lock(key))


@cache
def _lock_bundle() -> sa.Select[Any]:
    """One statement: the advisory lock of every session holding a clarification row of
    ``pending_id`` (in session-id order), then those session rows ``FOR UPDATE``.

    The lock function sits in the ``WHERE`` of the sorted subquery, so each session's
    advisory lock is taken before its row is locked (the order every session writer uses:
    advisory lock, then the row), and the statements after this one see the commits of
    whoever held the locks before.
    """
    sessions = (
        sa.select(messages.c.task_session_id.label("session_id"))
        .where(pending_id_of(messages) == sa.bindparam("pending_id"), is_clarification(messages))
        .distinct()
        .order_by(messages.c.task_session_id)
        .subquery("bundle_sessions")
    )
    lock_name = sa.literal(LOCK_PREFIX, sa.Text()) + sessions.c.session_id
    advisory = sa.func.pg_advisory_xact_lock(sa.func.hashtextextended(lock_name, 0))
    locked = sa.select(sessions.c.session_id).where(advisory.is_not(None))
    return (
        sa.select(task_sessions.c.id)
        .where(task_sessions.c.id.in_(locked))
        .order_by(task_sessions.c.id)
        .with_for_update(of=task_sessions)
    )


def _is_postgresql(connection: Connection) -> bool:
    return connection.dialect.name == "postgresql"


def lock_sessions(connection: Connection, session_ids: Iterable[str]) -> None:
    """Take the per-session advisory locks (PostgreSQL), in sorted order to avoid deadlock."""
    if not _is_postgresql(connection):
        return
    for session_id in sorted({sid for sid in session_ids if sid}):
        connection.execute(_advisory_lock(), {"lock_name": LOCK_PREFIX + session_id})


# The bundle lock compiled once per dialect (engine) and sent to the driver: it opens every
# claim, and ``Connection.execute`` would rebuild its cache key and result set-up each time
# (issue #34, as the claim's own UPDATE).
_LOCK_BUNDLE = PerDialect(_lock_bundle)


def lock_bundle(connection: Connection, pending_id: str) -> tuple[str, ...]:
    """Lock every session holding a clarification row of ``pending_id`` (advisory lock, then
    the session row ``FOR UPDATE``); returns their ids. A no-op on SQLite."""
    if not _is_postgresql(connection):
        return ()
    rows = _LOCK_BUNDLE(connection.dialect).rows(connection, {"pending_id": pending_id})
    return tuple(str(row[0]) for row in rows)
