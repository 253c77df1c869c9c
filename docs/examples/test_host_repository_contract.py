"""A host's own claim repository, proved by the contract suites Clarion ships.

The host wants an audit trail of every answer that won a claim, written by the repository
itself. :class:`AuditedClaimRepository` wraps another :class:`clarion.ports.ClaimRepository`
(here the in-memory reference; in production ``SqlClaimRepository`` on the host's own engine)
and records each winning claim. Subclassing the suites from :mod:`clarion.ports.testing`
checks that the wrapper kept every promise of the port: one winner per bundle, losers write
nothing, the lifecycle transitions and the list query.

Run on its own with ``.venv/bin/pytest docs/examples/test_host_repository_contract.py``;
``tests/docs/test_examples.py`` runs the same classes as part of the suite.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime

import attrs
import pytest

from clarion.adapters.memory import (
    InMemoryClaimRepository,
    InMemoryHostRepository,
    InMemoryStore,
    InMemoryTokenStore,
    InProcessLeases,
)
from clarion.adapters.system import UuidIds
from clarion.domain import (
    Answer,
    Asker,
    Bundle,
    ClarificationRow,
    ListPage,
    ListQuery,
    Question,
)
from clarion.domain.approvals import (
    NO_CANDIDATES,
    ApprovalTerms,
    Candidates,
    StandingApproval,
    Vote,
)
from clarion.domain.history import ResolvedPage, ResolvedQuery
from clarion.domain.listing import PendingSummary, Visibility
from clarion.domain.model import ANSWERED
from clarion.domain.resolved_by import ResolvedBy
from clarion.ports import (
    ActiveLimit,
    ClaimRepository,
    ClaimResult,
    LiveDelivery,
    ReconcileReport,
    Reread,
    ResumeRecord,
)
from clarion.ports.claims import VoteResult
from clarion.ports.testing import (
    ClaimRepositoryContract,
    ContractWorld,
    HostRepositoryContract,
    ManualClock,
    Replica,
    claim,
)


@attrs.frozen
class AuditEntry:
    """One winning claim: which bundle, how it ended, and when."""

    pending_id: str
    terminal: str
    responded_at: str


class AuditedClaimRepository:
    """A :class:`clarion.ports.ClaimRepository` that audits every winning claim.

    Everything else is delegated unchanged; a lost claim is not audited (it wrote nothing).
    """

    def __init__(self, inner: ClaimRepository, audit: list[AuditEntry]) -> None:
        self._inner = inner
        self._audit = audit

    def create_bundle(
        self,
        *,
        pending_id: str,
        session_id: str,
        task_id: str,
        questions: Sequence[Question],
        context: str,
        asker: Asker | None = None,
        approval: ApprovalTerms | None = None,
        candidates: Candidates = NO_CANDIDATES,
    ) -> Bundle:
        return self._inner.create_bundle(
            pending_id=pending_id,
            session_id=session_id,
            task_id=task_id,
            questions=questions,
            context=context,
            asker=asker,
            approval=approval,
            candidates=candidates,
        )

    def load_bundle(self, pending_id: str) -> Bundle | None:
        return self._inner.load_bundle(pending_id)

    def reread_bundle(self, pending_id: str) -> Reread:
        return self._inner.reread_bundle(pending_id)

    def load_visible_bundle(self, pending_id: str, visibility: Visibility) -> Bundle | None:
        return self._inner.load_visible_bundle(pending_id, visibility)

    def complete_active_bundle(
        self,
        pending_id: str,
        terminal: str,
        responses: Mapping[str, Answer] | None,
        *,
        resolved_by: ResolvedBy | None = None,
    ) -> ClaimResult:
        result = self._inner.complete_active_bundle(
            pending_id, terminal, responses, resolved_by=resolved_by
        )
        return self._audited(pending_id, terminal, result)

    def cast_vote(self, pending_id: str, vote: Vote, *, resolved_by: ResolvedBy) -> VoteResult:
        result = self._inner.cast_vote(pending_id, vote, resolved_by=resolved_by)
        if result.claim is not None:
            self._audited(pending_id, ANSWERED, result.claim)
        return result

    def approval_votes(self, pending_id: str) -> tuple[Vote, ...]:
        return self._inner.approval_votes(pending_id)

    def approve_by_standing(self, pending_id: str, standing: StandingApproval) -> ClaimResult:
        return self._audited(
            pending_id, ANSWERED, self._inner.approve_by_standing(pending_id, standing)
        )

    def _audited(self, pending_id: str, terminal: str, result: ClaimResult) -> ClaimResult:
        if result.claimed and result.responded_at is not None:
            self._audit.append(AuditEntry(pending_id, terminal, result.responded_at.isoformat()))
        return result

    def finalize_delivery(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        return self._inner.finalize_delivery(pending_id, terminal, claimed_ids)

    def finalize_live_delivery(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> LiveDelivery | None:
        return self._inner.finalize_live_delivery(pending_id, terminal, claimed_ids)

    def record_resume(
        self,
        pending_id: str,
        terminal: str,
        claimed_ids: Collection[str],
        resume: ResumeRecord,
    ) -> tuple[ClarificationRow, ...] | None:
        return self._inner.record_resume(pending_id, terminal, claimed_ids, resume)

    def restore_active_bundle(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        return self._inner.restore_active_bundle(pending_id, terminal, claimed_ids)

    def expire_active_bundle(
        self, session_id: str, pending_id: str
    ) -> tuple[ClarificationRow, ...]:
        return self._inner.expire_active_bundle(session_id, pending_id)

    def cancel_active_bundle(
        self, session_id: str, pending_id: str
    ) -> tuple[ClarificationRow, ...]:
        return self._inner.cancel_active_bundle(session_id, pending_id)

    def detach_active_bundles(self, session_id: str) -> tuple[ClarificationRow, ...]:
        return self._inner.detach_active_bundles(session_id)

    def active_pending_ids(self, session_id: str) -> tuple[str, ...]:
        return self._inner.active_pending_ids(session_id)

    def session_has_active_bundle(self, session_id: str) -> bool:
        return self._inner.session_has_active_bundle(session_id)

    def count_active_in_session(self, session_id: str, limit: int) -> int:
        return self._inner.count_active_in_session(session_id, limit)

    def count_active_asked(self, asker_id: str | None, limit: int) -> int:
        return self._inner.count_active_asked(asker_id, limit)

    def active_limit_reached(
        self, session_id: str | None, per_session: int, asker_id: str | None, per_identity: int
    ) -> ActiveLimit | None:
        return self._inner.active_limit_reached(session_id, per_session, asker_id, per_identity)

    def find_active_duplicate(self, session_id: str, questions: Sequence[Question]) -> str | None:
        return self._inner.find_active_duplicate(session_id, questions)

    def list_active_bundles(self, query: ListQuery) -> ListPage:
        return self._inner.list_active_bundles(query)

    def list_resolved_bundles(self, query: ResolvedQuery) -> ResolvedPage:
        return self._inner.list_resolved_bundles(query)

    def pending_summary(self) -> PendingSummary:
        return self._inner.pending_summary()

    def pending_actions_for_sessions(self, session_ids: Collection[str]) -> dict[str, str]:
        return self._inner.pending_actions_for_sessions(session_ids)

    def reconcile_undelivered(self, older_than: datetime | None = None) -> ReconcileReport:
        return self._inner.reconcile_undelivered(older_than)


@attrs.frozen
class HostWorld:
    """The contract world over the host's repositories, plus the host's audit log."""

    world: ContractWorld
    audit: list[AuditEntry]


def host_world() -> HostWorld:
    """A fresh store per test, every port reading one settable clock (the suites need it)."""
    store, clock, ids = InMemoryStore(), ManualClock(), UuidIds()
    audit: list[AuditEntry] = []
    leases = InProcessLeases()

    def replica() -> Replica:
        """Another process on the same store, with a liveness lease of its own (issue #28)."""
        lease = leases.lease()
        inner = InMemoryClaimRepository(store, clock, ids, lease=lease)
        return Replica(claims=AuditedClaimRepository(inner, audit), end=lease.release)

    world = ContractWorld(
        host=InMemoryHostRepository(store, clock, ids),
        claims=AuditedClaimRepository(InMemoryClaimRepository(store, clock, ids), audit),
        tokens=InMemoryTokenStore(store, clock, ids),
        clock=clock,
        storage_names=store.collection_names,
        replica=replica,
    )
    return HostWorld(world=world, audit=audit)


class TestAuditedClaimRepository(ClaimRepositoryContract):
    """Every claim, lifecycle and listing promise, on the host's repository."""

    @pytest.fixture(name="world")
    def fixture_world(self) -> ContractWorld:
        return host_world().world


class TestHostRepositoryBesideIt(HostRepositoryContract):
    """The host repository the audited one shares its store with."""

    @pytest.fixture(name="world")
    def fixture_world(self) -> ContractWorld:
        return host_world().world


def test_the_audit_records_each_winning_claim_once_and_no_lost_one() -> None:
    """The host's own promise, next to the port's (R1: one winner per bundle)."""
    host = host_world()
    pending_id = host.world.bundle_in_new_session("bundle-1", questions=2).pending_id
    first = claim(host.world, pending_id)
    second = claim(host.world, pending_id, option=2)
    assert (first.claimed, second.claimed) == (True, False)
    assert first.responded_at is not None
    assert host.audit == [AuditEntry(pending_id, "answered", first.responded_at.isoformat())]
