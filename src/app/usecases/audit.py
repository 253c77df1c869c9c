"""``clarion audit verify`` (issue #34): walk every audit chain and report its first broken link.

The chain is written by the claim repository in each claim's and restore's transaction (see
:mod:`clarion.domain.audit_chain`); verification only reads. Each scope (workspace) is walked
in ``seq`` order as a stream, so memory stays flat however long the chain is.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

import attrs
import structlog

from clarion.domain.audit_chain import (
    ChainBreak,
    ChainRecord,
    ChainReport,
    rows_disagree,
    verify_chain,
)
from clarion.ports.audit import AuditChain

log = structlog.get_logger(__name__)

ROWS_BATCH = 500  # bundles whose rows are read per statement by ``verify(rows=True)``


@attrs.define
class AuditLog:
    """The operator's reading of the audit chain."""

    chain: AuditChain

    def verify(
        self, workspace: str | None = None, *, rows: bool = False
    ) -> tuple[ChainReport, ...]:
        """One report per scope — every scope, or only ``workspace`` (reported, with no
        records, when nothing was recorded in it) — each naming its first broken link.

        With ``rows``, each bundle's newest record is also compared with the bundle's rows as
        they stand (:func:`clarion.domain.audit_chain.rows_disagree`), so an edit of the rows
        themselves — who resolved, the answer, the status — is named too."""
        scopes = self.chain.scopes() if workspace is None else (workspace,)
        reports = []
        for scope in scopes:
            latest: dict[str, ChainRecord] = {}
            walked = (
                _noting(self.chain.records(scope), latest) if rows else self.chain.records(scope)
            )
            report = verify_chain(scope, walked, self.chain.head(scope))
            if rows and report.broken is None:
                report = attrs.evolve(report, rows_changed=self._rows_changed(latest))
            for kind, link in (("chain", report.broken), ("rows", report.rows_changed)):
                if link is not None:
                    log.warning(
                        "audit.chain_broken",
                        scope=scope,
                        kind=kind,
                        seq=link.seq,
                        pending_id=link.pending_id,
                        reason=link.reason,
                    )
            reports.append(report)
        return tuple(reports)

    def _rows_changed(self, latest: dict[str, ChainRecord]) -> ChainBreak | None:
        """The first bundle (by its newest record's seq) whose rows disagree with it."""
        ordered = sorted(latest.values(), key=lambda record: record.seq)
        for start in range(0, len(ordered), ROWS_BATCH):
            batch = ordered[start : start + ROWS_BATCH]
            found = self.chain.bundle_rows([record.pending_id for record in batch])
            for record in batch:
                reason = rows_disagree(record, found.get(record.pending_id, []))
                if reason is not None:
                    return ChainBreak(record.seq, record.pending_id, reason)
        return None

    def chain_records(self, pending_ids: Collection[str]) -> dict[str, ChainRecord]:
        """The newest chain record of each bundle (``audit export``'s chain fields)."""
        return self.chain.latest_for(pending_ids)


def _noting(
    records: Iterator[ChainRecord], latest: dict[str, ChainRecord]
) -> Iterator[ChainRecord]:
    """``records`` as they stream past, keeping each bundle's newest in ``latest``."""
    for record in records:
        latest[record.pending_id] = record
        yield record


__all__ = ["AuditLog"]
