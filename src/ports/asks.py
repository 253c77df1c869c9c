"""Durable agent asks (issue #28): see :mod:`clarion.domain.asks`."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from clarion.domain.asks import AskRecord, AskState


class AskRecords(Protocol):
    """Contract (checked by ``clarion.ports.testing.asks`` on every implementation):

    - :meth:`reserve` is atomic per ``(owner, scope, retry_key)`` among *open* records: of any
      number of concurrent reservations of one key — in several processes — exactly one
      inserts; every other returns that record.
    - A record is read back unchanged by :meth:`get` until :meth:`move` changes its state.
    - :meth:`move` is a compare-and-set: it changes the state only from one of ``from_states``.
    """

    def reserve(self, record: AskRecord) -> AskRecord:
        """Insert ``record`` (state OPEN) unless an open record with the same owner, scope and
        retry key exists; return whichever record now holds the key."""
        ...

    def get(self, ask_id: str) -> AskRecord | None:
        """The record with this id, or None."""
        ...

    def find(self, owner: str, scope: str, retry_key: str) -> AskRecord | None:
        """The open record holding this key; else, for an idempotency key, the newest record
        that was returned (a retry of a finished call gets its outcome again); else None."""
        ...

    def waiting(self, owner: str, scope: str, limit: int) -> tuple[AskRecord, ...]:
        """Up to ``limit`` open records of ``owner`` in ``scope`` that were not made as tasks,
        oldest first (the asks whose outcome the agent has not received)."""
        ...

    def returned(self, ask_id: str) -> int | None:
        """Move an open record to RETURNED and say how many *other* open records not made as
        tasks its owner still has in its scope (what :meth:`waiting` would list besides it),
        in one transaction; None when the record was not open."""
        ...

    def move(self, ask_id: str, from_states: Collection[AskState], to: AskState) -> bool:
        """Set the state to ``to`` if it is one of ``from_states``; True when it changed."""
        ...
