"""``clarion audit verify`` (issue #34): walk every audit chain and report its first broken link.

The chain is written by the claim repository in each claim's and restore's transaction (see
:mod:`clarion.domain.audit_chain`); verification only reads. Each scope (workspace) is walked
in ``seq`` order as a stream, so memory stays flat however long the chain is.
"""

from __future__ import annotations

from collections.abc import Collection

import attrs
import structlog

from clarion.domain.audit_chain import ChainRecord, ChainReport, verify_chain
from clarion.ports.audit import AuditChain

log = structlog.get_logger(__name__)


@attrs.define
class AuditLog:
    """The operator's reading of the audit chain."""

    chain: AuditChain

    def verify(self, workspace: str | None = None) -> tuple[ChainReport, ...]:
        """One report per scope — every scope, or only ``workspace`` (reported, with no
        records, when nothing was recorded in it) — each naming its first broken link."""
        scopes = self.chain.scopes() if workspace is None else (workspace,)
        reports = []
        for scope in scopes:
            report = verify_chain(scope, self.chain.records(scope), self.chain.head(scope))
            if report.broken is not None:
                broken = report.broken
                log.warning(
                    "audit.chain_broken",
                    scope=scope,
                    seq=broken.seq,
                    pending_id=broken.pending_id,
                    reason=broken.reason,
                )
            reports.append(report)
        return tuple(reports)

    def chain_records(self, pending_ids: Collection[str]) -> dict[str, ChainRecord]:
        """The newest chain record of each bundle (``audit export``'s chain fields)."""
        return self.chain.latest_for(pending_ids)


__all__ = ["AuditLog"]
