"""The SQL :class:`clarion.ports.asks.AskRecords`: ``agent_asks``, one row per agent ask.

The partial unique index on the open rows' ``(owner, scope, retry_key)`` makes
:meth:`SqlAskRecords.reserve` atomic across processes on SQLite and PostgreSQL alike: a second
open row for one key fails to insert, and the loser reads the winner's row.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import RowMapping

from clarion.adapters.sql.engine import SqlRepository, read_one, read_transaction
from clarion.adapters.sql.rows import from_row, row_values
from clarion.adapters.sql.schema import agent_asks
from clarion.domain.asks import IDEMPOTENCY_PREFIX, AskRecord, AskState

_t = agent_asks.c


def _record(row: RowMapping) -> AskRecord:
    return from_row(AskRecord, row, state=AskState(row["state"]), as_task=bool(row["as_task"]))


class SqlAskRecords(SqlRepository):
    """See the module docstring."""

    def _one(self, query: sa.Select[Any]) -> AskRecord | None:
        row = read_one(self._engine, query)
        return _record(row) if row is not None else None

    def _holder(self, owner: str, scope: str, retry_key: str) -> sa.Select[Any]:
        return sa.select(agent_asks).where(
            _t.owner == owner,
            _t.scope == scope,
            _t.retry_key == retry_key,
            _t.state == AskState.OPEN.value,
        )

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
                held = self._one(self._holder(stored.owner, stored.scope, stored.retry_key))
                if held is not None:
                    return held
                continue  # the holder was returned meanwhile: the key is free again
            return stored

    def get(self, ask_id: str) -> AskRecord | None:
        return self._one(sa.select(agent_asks).where(_t.id == ask_id))

    def find(self, owner: str, scope: str, retry_key: str) -> AskRecord | None:
        held = self._one(self._holder(owner, scope, retry_key))
        if held is not None or not retry_key.startswith(IDEMPOTENCY_PREFIX):
            return held
        return self._one(
            sa.select(agent_asks)
            .where(
                _t.owner == owner,
                _t.scope == scope,
                _t.retry_key == retry_key,
                _t.state == AskState.RETURNED.value,
            )
            .order_by(_t.created_at.desc(), _t.id.desc())
            .limit(1)
        )

    def waiting(self, owner: str, scope: str, limit: int) -> tuple[AskRecord, ...]:
        query = (
            sa.select(agent_asks)
            .where(
                _t.owner == owner,
                _t.scope == scope,
                _t.state == AskState.OPEN.value,
                _t.as_task.is_(False),
            )
            .order_by(_t.created_at, _t.id)
            .limit(limit)
        )
        with read_transaction(self._engine) as connection:
            return tuple(_record(row) for row in connection.execute(query).mappings())

    def returned(self, ask_id: str) -> int | None:
        with self._writes.begin() as connection:
            moved = connection.execute(
                sa.update(agent_asks)
                .where(_t.id == ask_id, _t.state == AskState.OPEN.value)
                .values(state=AskState.RETURNED.value)
                .returning(_t.owner, _t.scope)
            ).first()
            if moved is None:
                return None
            count = connection.execute(
                sa.select(sa.func.count())
                .select_from(agent_asks)
                .where(
                    _t.owner == moved.owner,
                    _t.scope == moved.scope,
                    _t.state == AskState.OPEN.value,
                    _t.as_task.is_(False),
                )
            ).scalar_one()
        return int(count)

    def move(self, ask_id: str, from_states: Collection[AskState], to: AskState) -> bool:
        with self._writes.begin() as connection:
            result = connection.execute(
                sa.update(agent_asks)
                .where(_t.id == ask_id, _t.state.in_([state.value for state in from_states]))
                .values(state=to.value)
            )
        return bool(result.rowcount)
