"""The in-memory :class:`clarion.ports.asks.AskRecords` (one process, nothing kept)."""

from __future__ import annotations

import threading
from collections.abc import Collection

import attrs

from clarion.adapters.memory.history import session_facts
from clarion.adapters.memory.store import InMemoryStore
from clarion.domain.asks import AskProbe, AskRecord, AskState, still_waiting
from clarion.domain.model import CLARIFICATION_REQUEST
from clarion.domain.rows import order_rows, parse_row


@attrs.define
class InMemoryAskRecords:
    """Agent asks in a dict under a lock, in insertion order. Given the in-memory world the
    claim repository keeps its bundles in (``store``), :meth:`returned` leaves out the asks
    whose bundle still waits, by the rule the use case applies, and :meth:`probe` says which
    ask waits; without it (a host's own claim repository, whose bundles it cannot see) it
    leaves out none and says none waits."""

    _store: InMemoryStore | None = attrs.field(default=None, alias="store")
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

    def probe(self, ask_id: str) -> AskProbe | None:
        record = self.get(ask_id)
        return AskProbe(record, self._waits(record)) if record is not None else None

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

    def returned(self, ask_id: str, limit: int) -> tuple[AskRecord, ...] | None:
        with self._lock:
            record = self._records.get(ask_id)
            if record is None or record.state is not AskState.OPEN:
                return None
            self._records[ask_id] = attrs.evolve(record, state=AskState.RETURNED)
            others = sorted(
                (
                    other
                    for other in self._records.values()
                    if (other.owner, other.scope) == (record.owner, record.scope)
                    and other.state is AskState.OPEN
                    and not other.as_task
                ),
                key=lambda other: (other.created_at, other.id),
            )
            return tuple(other for other in others[:limit] if not self._waits(other))

    def _waits(self, record: AskRecord) -> bool:
        """Whether ``record``'s bundle still waits, from one look at the world."""
        if self._store is None:
            return False
        store = self._store
        with store.lock:
            rows = order_rows(
                parse_row(message)
                for message in store.records_with_pending_id(record.pending_id)
                if message.type == CLARIFICATION_REQUEST
            )
            if not rows:
                return False
            return still_waiting(rows, session_facts(store, rows[0].session_id, rows[0].turn_id))

    def move(self, ask_id: str, from_states: Collection[AskState], to: AskState) -> bool:
        with self._lock:
            record = self._records.get(ask_id)
            if record is None or record.state not in from_states:
                return False
            self._records[ask_id] = attrs.evolve(record, state=to)
            return True
