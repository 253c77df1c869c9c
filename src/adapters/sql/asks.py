"""The SQL :class:`clarion.ports.asks.AskRecords`: ``agent_asks``, one row per agent ask.

The partial unique index on the open rows' ``(owner, scope, retry_key)`` makes
:meth:`SqlAskRecords.reserve` atomic across processes on SQLite and PostgreSQL alike: a second
open row for one key fails to insert, and the loser reads the winner's row.

:meth:`SqlAskRecords.returned` lists, in the statement after its ``UPDATE``, the asker's
other open asks whose bundle may no longer wait: of the oldest ``limit``, those whose bundle
has no row being delivered and either no row at all or a row that is not pending, lies on a
session that ended or on a turn a later turn superseded — a few probes by pending id per ask
(``ix_task_session_messages_pending_id``) instead of a re-read of every bundle. It keeps
every ask :func:`clarion.domain.asks.still_waiting` says is settled (it judges all of the
bundle's rows where that rule reads the first row's session and turn), and maybe a few more.
:meth:`SqlAskRecords.probe` reads a record with the negation of the same test: its ask
surely waits when its bundle has a row being delivered, or rows that all keep it open.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from functools import cache
from typing import Any

import attrs
import sqlalchemy as sa

from clarion.adapters.sql.engine import SqlRepository, read_one, read_transaction
from clarion.adapters.sql.metadata_sql import (
    DefaultCollation,
    Inline,
    is_clarification,
    is_delivery_pending,
    is_pendingish,
    pending_id_of,
)
from clarion.adapters.sql.rows import from_row, row_values
from clarion.adapters.sql.schema import (
    agent_asks,
    messages,
    session_has_ended,
    task_session_turns,
    task_sessions,
)
from clarion.adapters.sql.statements import PerDialect
from clarion.domain.asks import IDEMPOTENCY_PREFIX, AskProbe, AskRecord, AskState

_t = agent_asks.c


def _record(row: Mapping[Any, Any]) -> AskRecord:
    return from_row(AskRecord, row, state=AskState(row["state"]), as_task=bool(row["as_task"]))


class SqlAskRecords(SqlRepository):
    """See the module docstring."""

    def _one(self, query: sa.Select[Any], **parameters: str) -> AskRecord | None:
        row = read_one(self._engine, query, parameters)
        return _record(row) if row is not None else None

    def _holder(self, owner: str, scope: str, retry_key: str) -> AskRecord | None:
        return self._one(_by_key(AskState.OPEN), owner=owner, scope=scope, retry_key=retry_key)

    def reserve(self, record: AskRecord) -> AskRecord:
        stored = attrs.evolve(record, state=AskState.OPEN)
        while True:
            try:
                with self._writes.begin() as connection:
                    connection.execute(
                        sa.insert(agent_asks).values(
                            row_values(agent_asks, stored, state=stored.state.value)
                        )
                    )
            except sa.exc.IntegrityError:
                held = self._holder(stored.owner, stored.scope, stored.retry_key)
                if held is not None:
                    return held
                continue  # the holder was returned meanwhile: the key is free again
            return stored

    def get(self, ask_id: str) -> AskRecord | None:
        return self._one(_by_id(), ask_id=ask_id)

    def probe(self, ask_id: str) -> AskProbe | None:
        # On the driver's cursor (``Connection.execute`` rebuilt its cache key and result
        # set-up on every poll, issue #35).
        with read_transaction(self._engine) as connection:
            rows = _PROBE(connection.dialect).mappings(connection, {"ask_id": ask_id})
        if not rows:
            return None
        row = rows[0]
        return AskProbe(_record(row), bool(row["waits"]))

    def find(self, owner: str, scope: str, retry_key: str) -> AskRecord | None:
        held = self._holder(owner, scope, retry_key)
        if held is not None or not retry_key.startswith(IDEMPOTENCY_PREFIX):
            return held
        return self._one(_by_key(AskState.RETURNED), owner=owner, scope=scope, retry_key=retry_key)

    def returned(self, ask_id: str, limit: int) -> tuple[AskRecord, ...] | None:
        with self._writes.begin() as connection:
            moved = connection.execute(
                sa.update(agent_asks)
                .where(_t.id == ask_id, _t.state == AskState.OPEN.value)
                .values(state=AskState.RETURNED.value)
                .returning(_t.owner, _t.scope)
            ).first()
            if moved is None:
                return None
            found = connection.execute(
                _earlier(), {"owner": moved.owner, "scope": moved.scope, "limit": limit}
            )
            return tuple(_record(row) for row in found.mappings())

    def move(self, ask_id: str, from_states: Collection[AskState], to: AskState) -> bool:
        with self._writes.begin() as connection:
            result = connection.execute(
                sa.update(agent_asks)
                .where(_t.id == ask_id, _t.state.in_([state.value for state in from_states]))
                .values(state=to.value)
            )
        return bool(result.rowcount)


# The reads by id and by key are built once (issue #35: building and cache-keying a statement
# cost about as much CPU as running it, on every tasks/get poll and every ask).
@cache
def _by_id() -> sa.Select[Any]:
    return sa.select(agent_asks).where(_t.id == sa.bindparam("ask_id"))


@cache
def _by_key(state: AskState) -> sa.Select[Any]:
    """The newest record in ``state`` holding the key ``owner``, ``scope``, ``retry_key``."""
    return (
        sa.select(agent_asks)
        .where(
            _t.owner == sa.bindparam("owner"),
            _t.scope == sa.bindparam("scope"),
            _t.retry_key == sa.bindparam("retry_key"),
            _t.state == state.value,
        )
        .order_by(_t.created_at.desc(), _t.id.desc())
        .limit(1)
    )


_ONE = Inline(1, sa.Integer())
RowTerm = Callable[[sa.FromClause], sa.ColumnElement[bool]]


def _bundle_row(key: sa.ColumnElement[str], name: str, *terms: RowTerm) -> Any:
    """One clarification row of the bundle ``key`` (a ``messages`` alias ``name``) meeting
    every term, as a scalar probe: NULL when there is none."""
    row = messages.alias(name)
    return (
        sa.select(_ONE)
        .select_from(row)
        .where(pending_id_of(row) == key, is_clarification(row), *(term(row) for term in terms))
        .limit(1)
        .scalar_subquery()
    )


def _session_ended(row: sa.FromClause) -> sa.ColumnElement[bool]:
    session = task_sessions.alias("ask_session")
    return sa.exists().where(session.c.id == row.c.task_session_id, session_has_ended(session))


def _superseded(row: sa.FromClause) -> sa.ColumnElement[bool]:
    """A later turn of the row's session started after the row's turn (the order of
    ``session_facts``' next turn)."""
    turn = task_session_turns.alias("ask_turn")
    newer = task_session_turns.alias("ask_newer")
    return sa.exists().where(
        turn.c.id == row.c.turn_id,
        newer.c.task_session_id == row.c.task_session_id,
        sa.tuple_(newer.c.started_at, newer.c.created_at, newer.c.id)
        > sa.tuple_(turn.c.started_at, turn.c.created_at, turn.c.id),
    )


def _not_open(row: sa.FromClause) -> sa.ColumnElement[bool]:
    """The row does not keep its bundle open: not pending, or on an ended session or a
    superseded turn."""
    return sa.or_(sa.not_(is_pendingish(row)), _session_ended(row), _superseded(row))


def _may_be_settled(key: sa.ColumnElement[str]) -> sa.ColumnElement[bool]:
    """The bundle ``key`` may no longer wait: no row of it is being delivered, and it has no
    row at all or one that does not keep it open."""
    return sa.and_(
        _bundle_row(key, "ask_marked", is_delivery_pending).is_(None),
        sa.or_(
            _bundle_row(key, "ask_any").is_(None),
            _bundle_row(key, "ask_closing", _not_open).is_not(None),
        ),
    )


@cache
def _probe() -> sa.Select[Any]:
    """The record ``ask_id`` and whether its bundle surely still waits (``waits``): the
    negation of :func:`_may_be_settled`, by the same few probes, in the same statement — one
    snapshot on either database, and one round trip for a ``tasks/get`` poll (issue #35)."""
    waits = sa.not_(_may_be_settled(DefaultCollation(_t.pending_id)))
    return sa.select(agent_asks, waits.label("waits")).where(_t.id == sa.bindparam("ask_id"))


# Every tasks/get poll runs the probe: on the driver's cursor, compiled once per dialect.
_PROBE = PerDialect(_probe)


@cache
def _earlier() -> sa.Select[Any]:
    """Of the ``limit`` oldest open asks of ``owner`` in ``scope`` not made as tasks, the
    ones whose bundle may no longer wait, oldest first."""
    oldest = (
        sa.select(agent_asks)
        .where(
            _t.owner == sa.bindparam("owner"),
            _t.scope == sa.bindparam("scope"),
            _t.state == AskState.OPEN.value,
            _t.as_task.is_(False),
        )
        .order_by(_t.created_at, _t.id)
        .limit(sa.bindparam("limit", type_=sa.Integer()))
        .subquery("oldest")
    )
    return (
        sa.select(oldest)
        .where(_may_be_settled(DefaultCollation(oldest.c.pending_id)))
        .order_by(oldest.c.created_at, oldest.c.id)
    )
