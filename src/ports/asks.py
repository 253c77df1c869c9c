"""Durable agent asks (issue #28): see :mod:`clarion.domain.asks`."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from clarion.domain.asks import AskProbe, AskRecord, AskState


class AskRecords(Protocol):
    """Contract (checked by ``clarion.ports.testing.asks`` on every implementation):

    - :meth:`reserve` is atomic per ``(owner, scope, retry_key)`` among *open* records: of any
      number of concurrent reservations of one key — in several processes — exactly one
      inserts; every other returns that record.
    - A record is read back unchanged by :meth:`get` until :meth:`move` changes its state.
    - :meth:`move` is a compare-and-set: it changes the state only from one of ``from_states``.
    - :meth:`probe` reads what :meth:`get` reads, and says an ask waits only when its bundle
      still waits (:func:`clarion.domain.asks.still_waiting`) in one snapshot of it.
    - :meth:`returned` never leaves out an earlier ask whose bundle no longer waits; a store
      that shares the claim repository's world also leaves out every one whose bundle has a
      row being delivered, or only pending rows on the current turn of a session that has
      not ended.
    """

    def reserve(self, record: AskRecord) -> AskRecord:
        """Insert ``record`` (state OPEN) unless an open record with the same owner, scope and
        retry key exists; return whichever record now holds the key."""
        ...

    def get(self, ask_id: str) -> AskRecord | None:
        """The record with this id, or None."""
        ...

    def probe(self, ask_id: str) -> AskProbe | None:
        """The record with this id (None when there is none) and whether its bundle surely
        still waits, from ONE read: ``waits`` is True only when the bundle has a row being
        delivered, or rows that are all pending on the current turn of a session that has not
        ended (:func:`clarion.domain.asks.still_waiting`); a store that cannot see the
        bundles says False, and the caller reads the bundle."""
        ...

    def find(self, owner: str, scope: str, retry_key: str) -> AskRecord | None:
        """The open record holding this key; else, for an idempotency key, the newest record
        that was returned (a retry of a finished call gets its outcome again); else None."""
        ...

    def returned(self, ask_id: str, limit: int) -> tuple[AskRecord, ...] | None:
        """Move an open record to RETURNED and, in the same transaction, list the earlier
        asks its owner may be handed with its outcome: of the ``limit`` oldest *other* open
        records of its owner in its scope that were not made as tasks, oldest first, those
        whose ask may be settled. None when the record was not open.

        A record is left out only when its bundle still waits
        (:func:`clarion.domain.asks.still_waiting`) as far as the store can tell from the
        bundle's rows and session: none whose ask is settled is ever left out, and some that
        still wait may be listed (a store that cannot see the bundles lists them all), so the
        caller reads each listed bundle again before handing its outcome over."""
        ...

    def move(self, ask_id: str, from_states: Collection[AskState], to: AskState) -> bool:
        """Set the state to ``to`` if it is one of ``from_states``; True when it changed."""
        ...
