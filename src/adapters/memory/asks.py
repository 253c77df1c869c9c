"""The in-memory :class:`clarion.ports.asks.AskRecords` (one process, nothing kept)."""

from __future__ import annotations

import threading
from collections.abc import Collection

import attrs

from clarion.domain.asks import AskRecord, AskState


@attrs.define
class InMemoryAskRecords:
    """Agent asks in a dict under a lock, in insertion order."""

    _records: dict[str, AskRecord] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def _open_holder(self, record: AskRecord) -> AskRecord | None:
        return next(
            (
                held
                for held in self._records.values()
                if held.state is AskState.OPEN
                and (held.owner, held.scope, held.retry_key)
                == (record.owner, record.scope, record.retry_key)
            ),
            None,
        )

    def reserve(self, record: AskRecord) -> AskRecord:
        with self._lock:
            held = self._open_holder(record)
            if held is not None:
                return held
            stored = attrs.evolve(record, state=AskState.OPEN)
            self._records[stored.id] = stored
            return stored

    def get(self, ask_id: str) -> AskRecord | None:
        with self._lock:
            return self._records.get(ask_id)

    def find(self, owner: str, scope: str, retry_key: str) -> AskRecord | None:
        with self._lock:
            matching = [
                record
                for record in self._records.values()
                if (record.owner, record.scope, record.retry_key) == (owner, scope, retry_key)
            ]
        held = next((record for record in matching if record.state is AskState.OPEN), None)
        if held is not None:
            return held
        returned = [record for record in matching if record.state is AskState.RETURNED]
        if returned and returned[-1].keyed:
            return max(returned, key=lambda record: record.created_at)
        return None

    def waiting(self, owner: str, scope: str, limit: int) -> tuple[AskRecord, ...]:
        with self._lock:
            found = [
                record
                for record in self._records.values()
                if record.owner == owner
                and record.scope == scope
                and record.state is AskState.OPEN
                and not record.as_task
            ]
        found.sort(key=lambda record: (record.created_at, record.id))
        return tuple(found[:limit])

    def returned(self, ask_id: str) -> int | None:
        with self._lock:
            record = self._records.get(ask_id)
            if record is None or record.state is not AskState.OPEN:
                return None
            self._records[ask_id] = attrs.evolve(record, state=AskState.RETURNED)
            return sum(
                1
                for other in self._records.values()
                if (other.owner, other.scope) == (record.owner, record.scope)
                and other.state is AskState.OPEN
                and not other.as_task
            )

    def move(self, ask_id: str, from_states: Collection[AskState], to: AskState) -> bool:
        with self._lock:
            record = self._records.get(ask_id)
            if record is None or record.state not in from_states:
                return False
            self._records[ask_id] = attrs.evolve(record, state=to)
            return True
