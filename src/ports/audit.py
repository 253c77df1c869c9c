"""The audit chain's read side (issue #34): what ``clarion audit verify`` and ``audit export``
read. The chain is written by the claim repository, in each claim's (and restore's) own
transaction; see :mod:`clarion.domain.audit_chain` for the record and the link."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Protocol

from clarion.domain.audit_chain import ChainHead, ChainRecord
from clarion.domain.rows import MessageRecord


class AuditChain(Protocol):
    """Contract (checked by ``clarion.ports.testing.audit``):

    - every winning claim appends one record to the chain of its bundle's workspace, in the
      claim's transaction (a lost or rolled-back claim appends none); every restore of an
      undelivered claim (``restore_active_bundle``, recovery) appends one ``restored`` record;
    - a scope's records have ``seq`` 1, 2, … with no gap and each links to the previous
      record's hash, however many processes claim at once; the head is the last record's.
    """

    def scopes(self) -> tuple[str, ...]:
        """Every scope that holds a record or a head, ordered (a scope whose head was deleted
        is still listed, so its records are still verified)."""
        ...

    def heads(self) -> tuple[ChainHead, ...]:
        """Every scope's head, ordered by scope."""
        ...

    def head(self, scope: str) -> ChainHead | None:
        """``scope``'s head; None when nothing was recorded in it."""
        ...

    def records(self, scope: str) -> Iterator[ChainRecord]:
        """``scope``'s records in ``seq`` order, read in pages (memory stays flat), exactly as
        stored — a verifier must see what is there, not what should be."""
        ...

    def bundle_rows(self, pending_ids: Collection[str]) -> dict[str, list[MessageRecord]]:
        """The clarification rows of each of ``pending_ids`` as they stand (absent: none)."""
        ...

    def latest_for(self, pending_ids: Collection[str]) -> dict[str, ChainRecord]:
        """The newest record (any scope) of each of ``pending_ids`` that has one."""
        ...


__all__ = ["AuditChain"]
