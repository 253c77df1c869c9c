"""In-process liveness leases (issue #28): the reference :class:`clarion.ports.ProcessLease`.

One :class:`InProcessLeases` registry stands for the place leases are held (PostgreSQL's lock
table, for :class:`clarion.adapters.sql.PostgresLease`); each :meth:`InProcessLeases.lease`
is one "process" holding its lease until :meth:`InProcessLease.release`. Several claim
repositories sharing one :class:`clarion.adapters.memory.InMemoryStore` (or one SQLite file),
each with a lease of the same registry, behave as the replicas of a shared database.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Collection

import attrs


@attrs.define
class InProcessLeases:
    """The registry: which process ids hold their lease."""

    _held: set[str] = attrs.field(factory=set, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)
    _numbers: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1), init=False)

    def lease(self) -> InProcessLease:
        """A new process's lease, held from now until released."""
        with self._lock:
            process_id = f"process-{next(self._numbers)}"
            self._held.add(process_id)
        return InProcessLease(self, process_id)

    def release(self, process_id: str) -> None:
        with self._lock:
            self._held.discard(process_id)

    def gone(self, process_ids: Collection[str]) -> frozenset[str]:
        with self._lock:
            return frozenset(process_ids) - self._held

    def holds(self, process_id: str) -> bool:
        with self._lock:
            return process_id in self._held


@attrs.define
class InProcessLease:
    """One process's lease of an :class:`InProcessLeases` registry."""

    _registry: InProcessLeases
    _process_id: str

    @property
    def process_id(self) -> str | None:
        return self._process_id if self._registry.holds(self._process_id) else None

    def gone(self, process_ids: Collection[str]) -> frozenset[str]:
        return self._registry.gone(process_ids)

    def release(self) -> None:
        """The process ends: its lease is free, and its deliveries recoverable at once."""
        self._registry.release(self._process_id)


__all__ = ["InProcessLease", "InProcessLeases"]
