"""The audit chain in memory (issue #34): the reference of :class:`clarion.ports.audit.AuditChain`.

Records are appended under the store lock the transition holds, so they join its atomic step;
each scope is a list in ``seq`` order whose last record is the head.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from clarion.adapters.memory.store import InMemoryStore
from clarion.domain.audit_chain import ChainEntry, ChainHead, ChainRecord, next_record
from clarion.domain.model import CLARIFICATION_REQUEST
from clarion.domain.rows import MessageRecord, resolve_task_id


def _scope(store: InMemoryStore, entry: ChainEntry) -> str:
    """The workspace of the entry's M5 task ("" without one)."""
    session = store.sessions.get(entry.session_id)
    task_id = resolve_task_id([entry.task_id], session.task_id if session is not None else None)
    task = store.tasks.get(task_id)
    return task.workspace_id if task is not None else ""


def _head(records: list[ChainRecord]) -> ChainHead | None:
    if not records:
        return None
    last = records[-1]
    return ChainHead(last.scope, last.seq, last.hash)


def append_record(store: InMemoryStore, entry: ChainEntry) -> None:
    """Append ``entry`` to its workspace's chain; the caller holds the store lock."""
    scope = _scope(store, entry)
    records = store.audit_chain.setdefault(scope, [])
    records.append(next_record(_head(records), scope, entry.pending_id, entry.body))


class InMemoryAuditChain:
    """The chain's read side over an :class:`InMemoryStore`."""

    def __init__(self, store: InMemoryStore) -> None:
        self._store = store

    def scopes(self) -> tuple[str, ...]:
        with self._store.lock:
            return tuple(sorted(self._store.audit_chain))

    def heads(self) -> tuple[ChainHead, ...]:
        with self._store.lock:
            found = (_head(records) for _, records in sorted(self._store.audit_chain.items()))
            return tuple(head for head in found if head is not None)

    def head(self, scope: str) -> ChainHead | None:
        with self._store.lock:
            return _head(self._store.audit_chain.get(scope, []))

    def records(self, scope: str) -> Iterator[ChainRecord]:
        with self._store.lock:
            snapshot = list(self._store.audit_chain.get(scope, []))
        yield from snapshot

    def bundle_rows(self, pending_ids: Collection[str]) -> dict[str, list[MessageRecord]]:
        found: dict[str, list[MessageRecord]] = {}
        with self._store.lock:
            for pending_id in set(pending_ids):
                rows = [
                    record
                    for record in self._store.records_with_pending_id(pending_id)
                    if record.type == CLARIFICATION_REQUEST
                ]
                if rows:
                    found[pending_id] = rows
        return found

    def latest_for(self, pending_ids: Collection[str]) -> dict[str, ChainRecord]:
        wanted = set(pending_ids)
        latest: dict[str, ChainRecord] = {}
        with self._store.lock:
            for records in self._store.audit_chain.values():
                for record in records:
                    if record.pending_id in wanted:
                        latest[record.pending_id] = record
        return latest


__all__ = ["InMemoryAuditChain", "append_record"]
