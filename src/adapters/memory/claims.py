"""The in-memory :class:`clarion.ports.ClaimRepository`: the executable reference of D4, the
claim (upstream facts §4.5), finalize/restore (§4.6), expire/detach (§4.2, §4.3), the list
query (§7, L1–L16 with the §9.13/§9.14 fixes) and the pending-action projection (§4.11).

It reads every row through :func:`clarion.domain.rows.parse_row` and decides membership with
the domain functions, so it is also the oracle the SQL repository is tested against. What each
transition writes, and how a new bundle's rows are built, comes from
:mod:`clarion.domain.transitions`, which the SQL repository uses too: the two differ only in
which rows they pick, which is what the differential test compares.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import attrs
import structlog

from clarion.adapters.memory import approvals
from clarion.adapters.memory.audit import append_record
from clarion.adapters.memory.history import list_resolved_bundles, session_facts
from clarion.adapters.memory.listing import list_active_bundles
from clarion.adapters.memory.store import InMemoryStore, frozen_metadata
from clarion.domain import transitions
from clarion.domain.activeness import (
    pending_action_for_session,
)
from clarion.domain.approvals import (
    NO_CANDIDATES,
    ApprovalTerms,
    Candidates,
    Decision,
    StandingApproval,
    Vote,
    decision_responses,
)
from clarion.domain.audit_chain import ChainEntry
from clarion.domain.errors import NotFound, Resource
from clarion.domain.history import ResolvedPage, ResolvedQuery
from clarion.domain.host import Turn
from clarion.domain.listing import (
    ListPage,
    ListQuery,
    PendingSummary,
    Visibility,
    task_visible,
)
from clarion.domain.model import (
    ANSWERED,
    CANCELLED,
    CLARIFICATION_REQUEST,
    EXPIRED,
    PENDING,
    RESUME,
    TERMINAL_OUTCOMES,
    Answer,
    Question,
    SessionState,
)
from clarion.domain.notifications import ANSWERABLE, CANCELLED_EVENT, EXPIRED_EVENT, RESOLVED
from clarion.domain.questions import same_questions
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import (
    Asker,
    Bundle,
    ClarificationRow,
    MessageRecord,
    make_bundle,
    order_rows,
    parse_row,
    pending_ids_in_creation_order,
)
from clarion.ports.claims import (
    ActiveLimit,
    ClaimResult,
    LiveDelivery,
    ProcessLease,
    ReconcileReport,
    Reread,
    ResumeRecord,
    VoteResult,
)
from clarion.ports.system import Clock, IdGenerator

logger = structlog.get_logger(__name__)


class InMemoryClaimRepository:
    """Clarification rows in an :class:`InMemoryStore`; every operation holds the store lock,
    so each is one atomic step and exactly one concurrent claim can win."""

    def __init__(
        self,
        store: InMemoryStore,
        clock: Clock,
        ids: IdGenerator,
        *,
        notifications: bool = True,
        lease: ProcessLease | None = None,
        audit_chain: bool = True,
    ) -> None:
        self._store = store
        self._clock = clock
        self._ids = ids
        self._notifications = notifications
        self._lease = lease
        # Issue #34: every claim and restore appends its audit record (off only to measure).
        self._audit_chain = audit_chain

    def _record(self, pending_id: str, event: str, now: datetime) -> None:
        """Issue #17: the event joins the transition's atomic step (the store lock is held),
        at the transition's timestamp; its id is internal, drawn apart from the injected
        generator so recording changes no id a surface shows."""
        if self._notifications:
            self._store.record_event(uuid.uuid4().hex, pending_id, event, now)

    # -- reads ---------------------------------------------------------------------------

    def _rows(self, pending_id: str) -> list[tuple[MessageRecord, ClarificationRow]]:
        """The bundle's clarification rows (lookups never see other message types, §9.17)."""
        return [
            (record, parse_row(record))
            for record in self._store.records_with_pending_id(pending_id)
            if record.type == CLARIFICATION_REQUEST
        ]

    def load_bundle(self, pending_id: str) -> Bundle | None:
        with self._store.lock:
            rows = order_rows(row for _, row in self._rows(pending_id))
            if not rows:
                return None
            bundle = make_bundle(pending_id, rows, self._store.session_task_id(rows[0].session_id))
            return approvals.with_extras(self._store, bundle)

    def reread_bundle(self, pending_id: str) -> Reread:
        with self._store.lock:
            bundle = self.load_bundle(pending_id)
            if bundle is None:
                return Reread(bundle=None)
            first = bundle.rows[0]
            return Reread(bundle, session_facts(self._store, first.session_id, first.turn_id))

    def load_visible_bundle(self, pending_id: str, visibility: Visibility) -> Bundle | None:
        with self._store.lock:
            bundle = self.load_bundle(pending_id)
            if bundle is None or not self._store.assignment_admits(visibility.assignee, pending_id):
                return None
            if visibility.unscoped:
                return bundle
            task = self._store.tasks.get(bundle.task_id)
            if task is None:  # M5a
                return None
            workspace = self._store.workspaces.get(task.workspace_id)
            owner_id = workspace.owner_id if workspace is not None else ""
            if task_visible(visibility, task.workspace_id, workspace is not None, owner_id):
                return bundle
            return None

    # -- writes --------------------------------------------------------------------------

    def _write(
        self,
        record: MessageRecord,
        change: Callable[[Mapping[str, Any]], dict[str, Any]],
        updated_at: datetime | None,
        resolved_by: ResolvedBy | None = None,
    ) -> ClarificationRow:
        metadata = change(copy.deepcopy(dict(record.metadata)))
        new = transitions.rewritten(record, frozen_metadata(metadata), updated_at, resolved_by)
        self._store.put_message(new)
        row = parse_row(new)
        if not row.delivery_pending:
            self._store.delivery_processes.pop(row.id, None)  # leaves with the marker
        return row

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
        with self._store.lock:
            session = self._store.sessions.get(session_id)
            if session is None:
                raise NotFound(resource=Resource.SESSION, key=session_id)
            turn_id = self._store.current_turn_id(session_id)
            if turn_id is None:
                turn_id = self._start_turn(session_id)
            records = transitions.new_bundle_records(
                pending_id=pending_id,
                session_id=session_id,
                task_id=task_id,
                turn_id=turn_id,
                questions=questions,
                context=context,
                asker=asker,
                new_id=self._ids.new_id,
                now=self._clock.now,
            )
            rows = []
            for record in records:
                frozen = attrs.evolve(record, metadata=frozen_metadata(record.metadata))
                self._store.put_message(frozen)
                rows.append(parse_row(frozen))
            approvals.store_extras(self._store, pending_id, approval, candidates)
            if records:
                self._record(pending_id, ANSWERABLE, records[0].created_at)
            bundle = make_bundle(pending_id, rows, session.task_id)
            return approvals.with_extras(self._store, bundle)

    def _start_turn(self, session_id: str) -> str:
        now = self._clock.now()
        turn = Turn(id=self._ids.new_id(), session_id=session_id, started_at=now, created_at=now)
        self._store.put_turn(turn)
        return turn.id

    def complete_active_bundle(
        self,
        pending_id: str,
        terminal: str,
        responses: Mapping[str, Answer] | None,
        *,
        resolved_by: ResolvedBy | None = None,
    ) -> ClaimResult:
        if terminal not in TERMINAL_OUTCOMES:
            raise ValueError(f"invalid clarification terminal status {terminal!r}")
        with self._store.lock:
            if not self._store.bundle_is_well_formed(pending_id):
                return ClaimResult(claimed=False)
            # Only the pending rows of a (legacy, mixed) bundle are claimed (§4.5, L12).
            claimed = [
                (rec, row) for rec, row in self._rows(pending_id) if self._store.row_is_active(row)
            ]
            if not claimed:
                return ClaimResult(claimed=False)
            changes = [(rec, self._claim_change(row, terminal, responses)) for rec, row in claimed]
            now = self._clock.now()
            rows = [self._write(rec, change, now, resolved_by) for rec, change in changes]
            process_id = self._lease.process_id if self._lease is not None else None
            for row in rows:
                if process_id is None:
                    self._store.delivery_processes.pop(row.id, None)
                else:
                    self._store.delivery_processes[row.id] = process_id
            self._record(pending_id, RESOLVED, now)
            self._chain(partial(ChainEntry.resolution, rows, terminal, responses, resolved_by, now))
        logger.info("clarification.claimed", pending_id=pending_id, status=terminal)
        return ClaimResult(claimed=True, rows=order_rows(rows), responded_at=now)

    # -- approvals (issue #33) ------------------------------------------------------------

    def cast_vote(self, pending_id: str, vote: Vote, *, resolved_by: ResolvedBy) -> VoteResult:
        with self._store.lock:
            bundle = self.load_bundle(pending_id)
            active = (
                bundle is not None
                and self._store.bundle_is_well_formed(pending_id)
                and any(self._store.row_is_active(row) for row in bundle.rows)
            )

            def claim(stored: Vote, decision: Decision) -> ClaimResult:
                responses = decision_responses(decision, stored.comment)
                return self.complete_active_bundle(
                    pending_id, ANSWERED, responses, resolved_by=resolved_by
                )

            return approvals.cast_vote(
                self._store, bundle, vote, self._clock.now(), active=active, claim=claim
            )

    def approval_votes(self, pending_id: str) -> tuple[Vote, ...]:
        with self._store.lock:
            return tuple(self._store.approval_votes.get(pending_id, ()))

    def approve_by_standing(self, pending_id: str, standing: StandingApproval) -> ClaimResult:
        responses = decision_responses(Decision.APPROVE, "")
        with self._store.lock:
            if self._store.extras_of(pending_id).approval is None:
                return ClaimResult(claimed=False)  # only an approval request
            result = self.complete_active_bundle(
                pending_id, ANSWERED, responses, resolved_by=standing.resolver()
            )
            if result.claimed:
                approvals.mark_standing(self._store, pending_id, standing.id)
            return result

    @staticmethod
    def _claim_change(
        row: ClarificationRow, terminal: str, responses: Mapping[str, Answer] | None
    ) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
        """Check one row before anything is written (any failure aborts the whole claim)."""
        answer = transitions.claimed_answer(row.id, row.question_id, terminal, responses)
        return lambda metadata: transitions.claimed(metadata, terminal, answer)

    def _delivery_rows(self, pending_id: str) -> list[tuple[MessageRecord, ClarificationRow]]:
        return [(rec, row) for rec, row in self._rows(pending_id) if row.delivery_pending]

    def _claimed_delivery_rows(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> list[tuple[MessageRecord, ClarificationRow]] | None:
        """The bundle's rows in delivery when they are exactly the claim's (``claimed_ids``,
        all ``terminal``), else None: what finalizing or resuming a delivery may write (the
        store lock is held)."""
        marked = self._delivery_rows(pending_id)
        if not transitions.is_exact_claim(list(claimed_ids), [row for _, row in marked], terminal):
            return None
        return marked

    def finalize_delivery(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        finalized = self._finalize(pending_id, terminal, claimed_ids, wake_session=False)
        return finalized.rows if finalized is not None else None

    def finalize_live_delivery(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> LiveDelivery | None:
        return self._finalize(pending_id, terminal, claimed_ids, wake_session=True)

    def _finalize(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str], *, wake_session: bool
    ) -> LiveDelivery | None:
        with self._store.lock:
            marked = self._claimed_delivery_rows(pending_id, terminal, claimed_ids)
            if marked is None:
                return None
            # updated_at stays the claim's, so winner and loser report one responded_at.
            rows = order_rows(self._write(rec, transitions.delivered, None) for rec, _ in marked)
            session = None
            if wake_session:
                session = self._store.set_session_state(
                    rows[0].session_id,
                    SessionState.RUNNING,
                    self._clock.now(),
                    expected=(SessionState.WAITING_FOR_INPUT,),
                )
            return LiveDelivery(rows=rows, session=session)

    def record_resume(
        self,
        pending_id: str,
        terminal: str,
        claimed_ids: Collection[str],
        resume: ResumeRecord,
    ) -> tuple[ClarificationRow, ...] | None:
        with self._store.lock:
            marked = self._claimed_delivery_rows(pending_id, terminal, claimed_ids)
            if marked is None:
                return None
            session = self._store.sessions.get(resume.session_id)
            if session is None:
                raise NotFound(resource=Resource.SESSION, key=resume.session_id)
            superseded = self._store.active_on_current_turn(session.id)
            turn_id = self._start_turn(session.id)
            if self._notifications:  # issue #30: the new turn closes them (no row written)
                self._store.record_superseded(superseded, self._store.turns[turn_id])
            now = self._clock.now()
            message = resume.message(session.task_id, turn_id, self._ids.new_id(), now)
            self._store.put_message(
                attrs.evolve(message, metadata=frozen_metadata(message.metadata))
            )
            rows = [self._write(rec, transitions.delivered, None) for rec, _ in marked]
            return order_rows(rows)

    def _has_resume_record(self, pending_id: str) -> bool:
        return any(
            record.type == RESUME for record in self._store.records_with_pending_id(pending_id)
        )

    def restore_active_bundle(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        wanted = list(claimed_ids)
        if not wanted or len(set(wanted)) != len(wanted):
            return None
        with self._store.lock:
            if not self._store.bundle_is_well_formed(pending_id):
                return None
            restorable = {
                rec.id: (rec, row)
                for rec, row in self._delivery_rows(pending_id)
                if self._is_active_claimed(row)
            }
            picked = [restorable.get(message_id) for message_id in wanted]
            if any(item is None or item[1].status != terminal for item in picked):
                return None
            now = self._clock.now()
            rows = [
                self._write(item[0], transitions.restored, now)
                for item in picked
                if item is not None
            ]
            self._chain(partial(ChainEntry.restore, rows, now))
            return order_rows(rows)

    def _chain(self, entry: Callable[[], ChainEntry]) -> None:
        """Issue #34: append the transition's audit record in its atomic step (the store lock
        is held)."""
        if self._audit_chain:
            append_record(self._store, entry())

    def _is_active_claimed(self, row: ClarificationRow) -> bool:
        """Restorable: on the current turn of a non-terminal session (status aside)."""
        return self._store.row_is_active(attrs.evolve(row, status=PENDING))

    def expire_active_bundle(
        self, session_id: str, pending_id: str
    ) -> tuple[ClarificationRow, ...]:
        return self._end_bundle(session_id, pending_id, EXPIRED)

    def cancel_active_bundle(
        self, session_id: str, pending_id: str
    ) -> tuple[ClarificationRow, ...]:
        return self._end_bundle(session_id, pending_id, CANCELLED)

    def _end_bundle(
        self, session_id: str, pending_id: str, status: str
    ) -> tuple[ClarificationRow, ...]:
        """Expire or cancel: pending current-turn rows of the bundle in ``session_id`` (any
        session state) become ``status`` and detached; terminal siblings are left alone."""
        change = transitions.ended(status)
        with self._store.lock:
            targets = [
                rec
                for rec, row in self._rows(pending_id)
                if row.session_id == session_id
                and self._store.row_is_active(row, live_session=False)
            ]
            now = self._clock.now() if targets else None
            rows = [self._write(rec, change, now) for rec in targets]
            if rows and now is not None:
                event = EXPIRED_EVENT if status == EXPIRED else CANCELLED_EVENT
                self._record(pending_id, event, now)
        return order_rows(rows)

    def detach_active_bundles(self, session_id: str) -> tuple[ClarificationRow, ...]:
        with self._store.lock:
            targets = [
                rec
                for rec, row in self._session_rows(session_id)
                if not row.detached and self._store.row_is_active(row, live_session=False)
            ]
            now = self._clock.now() if targets else None
            rows = [self._write(rec, transitions.detached, now) for rec in targets]
        return order_rows(rows)

    def _session_rows(self, session_id: str) -> list[tuple[MessageRecord, ClarificationRow]]:
        return [
            (record, parse_row(record))
            for record in self._store.session_messages(session_id)
            if record.type == CLARIFICATION_REQUEST
        ]

    def active_pending_ids(self, session_id: str) -> tuple[str, ...]:
        with self._store.lock:
            return pending_ids_in_creation_order(
                row
                for _, row in self._session_rows(session_id)
                if self._store.row_is_active(row, live_session=False)
            )

    def session_has_active_bundle(self, session_id: str) -> bool:
        return bool(self.active_pending_ids(session_id))

    def count_active_in_session(self, session_id: str, limit: int) -> int:
        return min(len(self.active_pending_ids(session_id)), max(limit, 0))

    def count_active_asked(self, asker_id: str | None, limit: int) -> int:
        with self._store.lock:
            asked = {
                row.pending_id
                for row in map(parse_row, self._store.clarification_records())
                if row.pending_id
                and (asker_id is None or (row.asker is not None and row.asker.user_id == asker_id))
                and self._store.row_is_active(row)
            }
        return min(len(asked), max(limit, 0))

    def active_limit_reached(
        self, session_id: str | None, per_session: int, asker_id: str | None, per_identity: int
    ) -> ActiveLimit | None:
        with self._store.lock:
            in_session = self.count_active_in_session(session_id, per_session) if session_id else 0
            if session_id is not None and in_session >= per_session:
                return "session"
            if self.count_active_asked(asker_id, per_identity) >= per_identity:
                return "identity"
        return None

    def pending_summary(self) -> PendingSummary:
        with self._store.lock:
            rows = [row for row in map(parse_row, self._store.clarification_records())]
            active = {
                row.pending_id for row in rows if row.pending_id and self._store.row_is_active(row)
            }
            created = [row.created_at for row in rows if row.pending_id in active]
        return PendingSummary(count=len(active), oldest_created_at=min(created, default=None))

    def find_active_duplicate(self, session_id: str, questions: Sequence[Question]) -> str | None:
        for pending_id in self.active_pending_ids(session_id):
            bundle = self.load_bundle(pending_id)
            if bundle is not None and same_questions(bundle.questions, questions):
                return pending_id
        return None

    def pending_actions_for_sessions(self, session_ids: Collection[str]) -> dict[str, str]:
        actions: dict[str, str] = {}
        with self._store.lock:
            for session_id in set(session_ids):
                session = self._store.sessions.get(session_id)
                if session is None:
                    continue
                rows = (row for _, row in self._session_rows(session_id))
                action = pending_action_for_session(
                    rows, session, self._store.current_turn_id(session_id)
                )
                if action is not None:
                    actions[session_id] = action
        return actions

    def reconcile_undelivered(self, older_than: datetime | None = None) -> ReconcileReport:
        restored: list[str] = []
        finalized: list[str] = []
        with self._store.lock:
            rows = (parse_row(record) for record in self._store.clarification_records())
            pending_ids = sorted(
                {row.pending_id for row in rows if row.delivery_pending and row.pending_id}
            )
            for pending_id in pending_ids:
                marked = self._delivery_rows(pending_id)
                young = older_than is not None and any(
                    row.updated_at > older_than for _, row in marked
                )
                if young and not self._process_gone([row.id for _, row in marked]):
                    continue  # a delivery that may still be in flight elsewhere
                if self._has_resume_record(pending_id):
                    for rec, _ in marked:
                        self._write(rec, transitions.delivered, None)
                    finalized.append(pending_id)
                    continue
                now = self._clock.now()
                rolled = [self._write(rec, transitions.restored, now) for rec, _ in marked]
                self._chain(partial(ChainEntry.restore, rolled, now))
                restored.append(pending_id)
        return ReconcileReport(restored=tuple(restored), finalized=tuple(finalized))

    def _process_gone(self, row_ids: Sequence[str]) -> bool:
        """Issue #28: every row was claimed under a recorded process whose lease is free."""
        processes = [self._store.delivery_processes.get(row_id) for row_id in row_ids]
        if self._lease is None or not processes or None in processes:
            return False
        recorded = {process for process in processes if process is not None}
        return self._lease.gone(recorded) == recorded

    def list_active_bundles(self, query: ListQuery) -> ListPage:
        return list_active_bundles(self._store, query)

    def list_resolved_bundles(self, query: ResolvedQuery) -> ResolvedPage:
        return list_resolved_bundles(self._store, query)
