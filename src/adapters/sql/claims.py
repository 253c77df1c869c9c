"""The SQL :class:`clarion.ports.ClaimRepository` on SQLite and PostgreSQL.

Every transition is one write transaction that first takes the bundle's session locks
(PostgreSQL; ``BEGIN IMMEDIATE`` already serializes writers on SQLite).

- The claim is ONE conditional ``UPDATE … RETURNING`` whose ``WHERE`` is the whole active
  predicate (pending status, current turn, non-terminal session, the malformed-bundle guard)
  and whose ``SET`` writes the terminal status, the response (answered only), the delivery
  marker and ``updated_at``. The returned rows decide: none means the claim was lost; a row
  without a question id or without a response rolls the whole claim back (facts §4.5, R4a).
  It is compiled once per shape and dialect and sent straight to the driver; on PostgreSQL
  the same statement also appends the audit record (issue #34, :mod:`.audit`).
- Finalize, restore, expire, cancel and detach read the rows they may touch, compute their
  new metadata with :mod:`clarion.domain.transitions` (as the in-memory reference does), and
  write them with one conditional ``UPDATE`` repeating the transition's whole guard; fewer
  affected rows than rows read rolls the transaction back (facts §4.2–§4.6). The claim's
  keys and its response shape come from there too.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs
import structlog
from sqlalchemy.engine import Connection, Engine

from clarion.adapters.sql import approvals, changes, statements
from clarion.adapters.sql.audit import append_record, claim_and_append
from clarion.adapters.sql.engine import (
    check_engine,
    for_writes,
    read_transaction,
    snapshot_transaction,
)
from clarion.adapters.sql.history import list_resolved_bundles, session_facts
from clarion.adapters.sql.listing import list_active_bundles
from clarion.adapters.sql.locks import lock_bundle, lock_sessions
from clarion.adapters.sql.outbox import event_bits, record_superseded
from clarion.adapters.sql.records import (
    insert_messages,
    insert_turn,
    load_current_turn,
    load_session,
    message_record,
    message_record_at,
    resolver_values,
    update_session_state,
)
from clarion.adapters.sql.statements import DriverStatement, Guard
from clarion.adapters.sql.visibility import Seen, task_visibility
from clarion.domain import transitions
from clarion.domain.approvals import (
    KIND_APPROVAL,
    NO_CANDIDATES,
    ApprovalRecord,
    ApprovalTerms,
    Candidates,
    Decision,
    StandingApproval,
    Vote,
    approvals_count,
    decision_responses,
    earlier_vote,
    tally,
)
from clarion.domain.audit_chain import ChainEntry, resolution_body
from clarion.domain.errors import ClaimError, NotFound, Resource
from clarion.domain.history import ResolvedPage, ResolvedQuery
from clarion.domain.listing import ListPage, ListQuery, PendingSummary, Visibility
from clarion.domain.model import (
    ANSWERED,
    CANCELLED,
    EXPIRED,
    TERMINAL_OUTCOMES,
    Answer,
    Question,
    SessionState,
)
from clarion.domain.notifications import ANSWERABLE, CANCELLED_EVENT, EXPIRED_EVENT, RESOLVED
from clarion.domain.questions import questions_digest, same_questions
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import (
    Asker,
    Bundle,
    ClarificationRow,
    MessageRecord,
    bundle_questions,
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


class _VoteLate(Exception):
    """A deciding vote's claim was lost to another path: roll the vote back (issue #33)."""


class _GuardLost(Exception):
    """The rows a transition wrote are not the ones it requires — fewer than were read (a
    writer that bypassed the session locks got in between), or not exactly the claim's: roll
    back."""


def _rewrite(
    connection: Connection,
    kind: Guard,
    params: dict[str, Any],
    changed: Sequence[tuple[MessageRecord, dict[str, Any]]],
    updated_at: datetime | None,
) -> list[MessageRecord]:
    """Write every row's new metadata with the one conditional UPDATE of ``kind``.

    Raises:
        _GuardLost: when the guard no longer holds for every row.
    """
    if not changed:
        return []
    values = dict(params)
    for n, (record, metadata) in enumerate(changed):
        values[f"id_{n}"] = record.id
        values[f"metadata_{n}"] = metadata
    if updated_at is not None:
        values["updated_at"] = updated_at
    # A row leaving answered/rejected (a restore) drops who resolved it (issue #20) and an
    # unannounced resolution; an expiry or cancel marks its event (``event_bits``).
    release = not any(value.get(transitions.STATUS) in TERMINAL_OUTCOMES for _, value in changed)
    if release:
        values.setdefault("event_bits", 0)
    statement = statements.rewrite(
        kind, len(changed), touch=updated_at is not None, release=release
    )
    if connection.execute(statement, values).rowcount != len(changed):
        raise _GuardLost
    return [transitions.rewritten(record, value, updated_at) for record, value in changed]


def _rows(records: Sequence[MessageRecord]) -> list[ClarificationRow]:
    return [parse_row(record) for record in records]


def _select(connection: Connection, kind: Guard, params: dict[str, Any]) -> list[MessageRecord]:
    return [
        message_record_at(row) for row in connection.execute(statements.select_rows(kind), params)
    ]


_EVERYTHING = Visibility.everything()
_ABSENT_SESSION = "clarion:absent-session"  # a session id no session has (see load_bundle)


class SqlClaimRepository:
    """Clarification rows in ``task_session_messages``; see the module docstring.

    The empty string names no bundle: every lookup of ``""`` finds nothing.

    With ``notifications`` (the default) every create, winning claim, expiry and cancel also
    records its notification event (issue #17), on the rows it writes and in the statement
    that writes them (:mod:`clarion.adapters.sql.outbox`): the claim stays the one
    conditional UPDATE (P1) and its transaction holds no other write.
    """

    def __init__(
        self,
        engine: Engine,
        clock: Clock,
        ids: IdGenerator,
        *,
        notifications: bool = True,
        lease: ProcessLease | None = None,
        audit_chain: bool = True,
    ) -> None:
        self._engine = check_engine(engine)
        self._writes = for_writes(engine)
        self._clock = clock
        self._ids = ids
        self._notifications = notifications
        self._lease = lease
        # Issue #34: every claim and restore appends its audit record (off only to measure).
        self._audit_chain = audit_chain
        self._claims: dict[tuple[str, int, bool], DriverStatement] = {}

    def _claim_statement(
        self, connection: Connection, terminal: str, answers: int, *, fold: bool
    ) -> DriverStatement:
        """The claim's UPDATE for ``terminal`` and ``answers`` — with ``fold``, the audit
        append folded in (PostgreSQL, :func:`clarion.adapters.sql.audit.claim_and_append`) —
        compiled once for this engine's dialect (issue #34: the claim pays for no
        per-call compilation step)."""
        key = (terminal, answers, fold)
        found = self._claims.get(key)
        if found is None:
            claim = statements.claim(terminal, answers, question_ids=fold)
            found = DriverStatement.compile(claim, connection.dialect)
            if fold:
                found = claim_and_append(found, answers)
            self._claims[key] = found
        return found

    def _bits(self, event: str) -> int:
        """The ``event_bits`` a transition causing ``event`` marks its rows with."""
        return event_bits(event) if self._notifications else 0

    # -- reads ---------------------------------------------------------------------------

    def load_bundle(self, pending_id: str) -> Bundle | None:
        return self.load_visible_bundle(pending_id, _EVERYTHING)

    def load_visible_bundle(self, pending_id: str, visibility: Visibility) -> Bundle | None:
        """One statement: the rows come back only when the bundle is visible (decided inside
        it, so a hidden bundle reads and decodes nothing, issue #14). Only a malformed legacy
        bundle — every row without a task id, the rows on several sessions — needs a second
        read: the statement's verdict covers any of its sessions, M5 names the D2-first row's."""
        if not pending_id:
            return None
        with read_transaction(self._engine) as connection:
            return _load_visible(connection, pending_id, visibility)

    def reread_bundle(self, pending_id: str) -> Reread:
        if not pending_id:
            return Reread(bundle=None)
        # One snapshot: on PostgreSQL's READ COMMITTED the session's facts could otherwise
        # come from after a claim and resume (a new turn) the rows were read before.
        with snapshot_transaction(self._engine) as connection:
            bundle = _load_visible(connection, pending_id, _EVERYTHING)
            if bundle is None:
                return Reread(bundle=None)
            first = bundle.rows[0]
            return Reread(bundle, session_facts(connection, first.session_id, first.turn_id))

    def active_pending_ids(self, session_id: str) -> tuple[str, ...]:
        with read_transaction(self._engine) as connection:
            records = _select(connection, "session_active", {"session_id": session_id})
        return pending_ids_in_creation_order(_rows(records))

    def session_has_active_bundle(self, session_id: str) -> bool:
        return bool(self.active_pending_ids(session_id))

    def count_active_in_session(self, session_id: str, limit: int) -> int:
        if limit <= 0:
            return 0
        params = {"session_id": session_id, "limit": limit}
        with read_transaction(self._engine) as connection:
            return int(connection.execute(statements.active_in_session(), params).scalar_one())

    def count_active_asked(self, asker_id: str | None, limit: int) -> int:
        if limit <= 0:
            return 0
        params: dict[str, Any] = {"limit": limit}
        if asker_id is not None:
            params["asker_id"] = asker_id
        statement = statements.active_asked(scoped=asker_id is not None)
        with read_transaction(self._engine) as connection:
            return int(connection.execute(statement, params).scalar_one())

    def active_limit_reached(
        self, session_id: str | None, per_session: int, asker_id: str | None, per_identity: int
    ) -> ActiveLimit | None:
        """One statement bounds both counts by index entries (``statements.pending_row_bounds``);
        only a bound at its limit runs that limit's exact count, in the same transaction."""
        scoped = asker_id is not None
        params: dict[str, Any] = {
            "session_id": session_id or "",
            "session_limit": max(per_session, 0),
            "identity_limit": max(per_identity, 0),
        }
        if scoped:
            params["asker_id"] = asker_id
        with read_transaction(self._engine) as connection:
            in_session, asked = connection.execute(
                statements.pending_row_bounds(scoped=scoped), params
            ).one()
            if session_id is not None and in_session >= per_session:
                exact = {"session_id": session_id, "limit": per_session}
                if self._bounded(connection, statements.active_in_session(), exact, per_session):
                    return "session"
            if asked >= per_identity:
                exact = {"limit": per_identity, **({"asker_id": asker_id} if scoped else {})}
                statement = statements.active_asked(scoped=scoped)
                if self._bounded(connection, statement, exact, per_identity):
                    return "identity"
        return None

    @staticmethod
    def _bounded(
        connection: Connection, statement: Any, params: dict[str, Any], limit: int
    ) -> bool:
        """Whether the bounded count ``statement`` reaches ``limit`` (always, for a limit <= 0)."""
        if limit <= 0:
            return True
        return int(connection.execute(statement, params).scalar_one()) >= limit

    def pending_summary(self) -> PendingSummary:
        with read_transaction(self._engine) as connection:
            count, oldest = connection.execute(statements.pending_summary()).one()
        return PendingSummary(count=int(count), oldest_created_at=oldest)

    def find_active_duplicate(self, session_id: str, questions: Sequence[Question]) -> str | None:
        """One probe of ``ix_task_session_messages_pending_rows`` (session, current turn,
        digest) for the session's active rows carrying the questions' digest; a candidate is
        confirmed with ``same_questions`` on its rows (read in the same transaction only when
        there is one)."""
        params = {"session_id": session_id, "digest": questions_digest(questions)}
        with read_transaction(self._engine) as connection:
            found = connection.execute(statements.duplicate_candidates(), params).all()
            # First seen in creation order, as active_pending_ids orders them.
            ordered = sorted(found, key=lambda row: (row.created_at, row.id))
            candidates = list(dict.fromkeys(row.pending_id for row in ordered))
            for pending_id in candidates:
                records = _select(connection, "bundle", {"pending_id": pending_id})
                rows = [parse_row(record) for record in records]
                if same_questions(bundle_questions(order_rows(rows)), questions):
                    return str(pending_id)
        return None

    def pending_actions_for_sessions(self, session_ids: Collection[str]) -> dict[str, str]:
        wanted = sorted(set(session_ids))
        if not wanted:
            return {}
        with read_transaction(self._engine) as connection:
            found = connection.execute(
                statements.sessions_with_active_rows(), {"session_ids": wanted}
            ).scalars()
            return {session_id: "clarification" for session_id in found}

    def list_active_bundles(self, query: ListQuery) -> ListPage:
        with read_transaction(self._engine) as connection:
            return list_active_bundles(connection, query)

    def list_resolved_bundles(self, query: ResolvedQuery) -> ResolvedPage:
        with read_transaction(self._engine) as connection:
            return list_resolved_bundles(connection, query)

    # -- creation ------------------------------------------------------------------------

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
        with self._writes.begin() as connection:
            lock_sessions(connection, [session_id])
            session = load_session(connection, session_id)
            if session is None:
                raise NotFound(resource=Resource.SESSION, key=session_id)
            turn = load_current_turn(connection, session_id)
            if turn is None:
                now = self._clock.now()
                turn = insert_turn(connection, turn_id=self._ids.new_id(), session=session, now=now)
            records = transitions.new_bundle_records(
                pending_id=pending_id,
                session_id=session_id,
                task_id=task_id,
                turn_id=turn.id,
                questions=questions,
                context=context,
                asker=asker,
                new_id=self._ids.new_id,
                now=self._clock.now,
            )
            insert_messages(connection, records, unannounced=self._bits(ANSWERABLE))
            if records:  # issue #33: the extras join the rows' transaction
                approvals.insert_extras(
                    connection, pending_id, approval, candidates, records[0].created_at
                )
        return make_bundle(
            pending_id,
            (parse_row(r) for r in records),
            session.task_id,
            approval=ApprovalRecord(approval, approval.action.digest) if approval else None,
            candidates=candidates,
        )

    # -- approvals (issue #33) ------------------------------------------------------------

    def cast_vote(self, pending_id: str, vote: Vote, *, resolved_by: ResolvedBy) -> VoteResult:
        """One write transaction: the extras row locked first (votes on one request queue
        there), then the bundle, its activeness and the votes read, the vote inserted and —
        when the tally decides — the claim, all or nothing. A claim lost to another path (a
        deadline's default, a generic answer) rolls the vote back: it landed after the
        decision."""
        if not vote.voter_id:
            raise ValueError("a vote needs a voter id")
        try:
            with self._writes.begin() as connection:
                approvals.lock_extras(connection, pending_id)
                result = self._vote_on(connection, pending_id, vote, resolved_by)
                if result.claim is not None and not result.claim.claimed:
                    raise _VoteLate
        except _VoteLate:
            bundle = self.load_bundle(pending_id)
            votes = self.approval_votes(pending_id)
            required = bundle.approval.terms.required_approvals if bundle and bundle.approval else 0
            decision = bundle.decision if bundle is not None else None
            return VoteResult(None, False, approvals_count(votes), required, None, decision)
        if result.claim is not None:
            logger.info("clarification.claimed", pending_id=pending_id, status=ANSWERED)
        return result

    def _vote_on(
        self, connection: Connection, pending_id: str, vote: Vote, resolved_by: ResolvedBy
    ) -> VoteResult:
        bundle = _load_visible(connection, pending_id, _EVERYTHING) if pending_id else None
        if bundle is None or bundle.approval is None:
            decision = bundle.decision if bundle is not None else None
            return VoteResult(None, False, 0, 0, None, decision)
        required = bundle.approval.terms.required_approvals
        votes = approvals.read_votes(connection, pending_id)
        earlier = earlier_vote(votes, vote.voter_id)
        active = bool(_select(connection, "claimable", {"pending_id": pending_id}))
        if earlier is not None or not active:
            count = approvals_count(votes)
            return VoteResult(earlier, earlier is not None, count, required, None, bundle.decision)
        stored = attrs.evolve(vote, at=self._clock.now())
        approvals.insert_vote(connection, pending_id, stored, len(votes) + 1)
        votes.append(stored)
        decision = tally(required, votes)
        result = None
        if decision is not None:
            responses = decision_responses(decision, stored.comment)
            result = self._claim_on(connection, pending_id, ANSWERED, responses, resolved_by)
        return VoteResult(stored, False, approvals_count(votes), required, result, decision)

    def approval_votes(self, pending_id: str) -> tuple[Vote, ...]:
        with read_transaction(self._engine) as connection:
            return tuple(approvals.read_votes(connection, pending_id))

    def approve_by_standing(self, pending_id: str, standing: StandingApproval) -> ClaimResult:
        """The claim and the record's ``standing_id`` in one transaction, the extras row
        locked first as a vote does (so the two never take their locks in opposite orders)."""
        responses = decision_responses(Decision.APPROVE, "")
        with self._writes.begin() as connection:
            if approvals.lock_extras(connection, pending_id) != KIND_APPROVAL:
                return ClaimResult(claimed=False)  # only an approval request
            result = self._claim_on(
                connection, pending_id, ANSWERED, responses, standing.resolver()
            )
            if result.claimed:
                approvals.mark_standing(connection, pending_id, standing.id)
        if result.claimed:
            logger.info("clarification.claimed", pending_id=pending_id, status=ANSWERED)
        return result

    # -- the claim and its follow-ups ------------------------------------------------------

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
        if not pending_id:
            return ClaimResult(claimed=False)
        with self._writes.begin() as connection:
            result = self._claim_on(connection, pending_id, terminal, responses, resolved_by)
        if result.claimed:
            logger.info("clarification.claimed", pending_id=pending_id, status=terminal)
        return result

    def _claim_on(
        self,
        connection: Connection,
        pending_id: str,
        terminal: str,
        responses: Mapping[str, Answer] | None,
        resolved_by: ResolvedBy | None,
    ) -> ClaimResult:
        """The claim in the caller's write transaction (:meth:`complete_active_bundle`'s, or
        a deciding vote's, issue #33)."""
        answers, params = changes.claim_parameters(terminal, responses)
        params.update(resolver_values(resolved_by), event_bits=self._bits(RESOLVED))
        # The claim records, in its own UPDATE, under whose lease it delivers (issue #28).
        params["delivery_process"] = self._lease.process_id if self._lease is not None else None
        lock_bundle(connection, pending_id)
        # Read inside the serialized section, so stamps follow commit order.
        now = self._clock.now()
        params.update(pending_id=pending_id, terminal=terminal, updated_at=now)
        fold = self._folds_append(connection, answers, responses)
        if fold:
            params["body"] = resolution_body(pending_id, terminal, responses, resolved_by, now)
        statement = self._claim_statement(connection, terminal, answers, fold=fold)
        returned = statement.rows(connection, params)
        rows = [parse_row(message_record_at(row)) for row in returned]
        if not rows:
            return ClaimResult(claimed=False)
        # Raising here rolls the whole claim back: nothing persists (§4.5, R4a).
        for row in rows:
            transitions.claimed_answer(row.id, row.question_id, terminal, responses)
        if not (fold and returned[0][-1]):
            self._chain_resolution(connection, rows, terminal, responses, resolved_by, now)
        return ClaimResult(claimed=True, rows=order_rows(rows), responded_at=now)

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
        wanted = list(claimed_ids)
        if not pending_id:
            return None
        session = None
        try:
            with self._writes.begin() as connection:
                # Locks the bundle's sessions too (PostgreSQL), so the state change below
                # serializes with every other writer of that session.
                lock_bundle(connection, pending_id)
                # One statement: the marker goes from every marked row; updated_at stays the
                # claim's, so winner and loser report one responded_at. Unless those rows are
                # exactly the claim's, all of it rolls back.
                found = connection.execute(statements.finalize(), {"pending_id": pending_id})
                rows = order_rows(parse_row(message_record_at(row)) for row in found)
                if not transitions.is_exact_claim(wanted, rows, terminal):
                    raise _GuardLost
                if wake_session:
                    session = update_session_state(
                        connection,
                        rows[0].session_id,
                        SessionState.RUNNING,
                        self._clock.now(),
                        expected=(SessionState.WAITING_FOR_INPUT,),
                    )
        except _GuardLost:
            return None
        return LiveDelivery(rows=rows, session=session)

    def record_resume(
        self,
        pending_id: str,
        terminal: str,
        claimed_ids: Collection[str],
        resume: ResumeRecord,
    ) -> tuple[ClarificationRow, ...] | None:
        wanted = list(claimed_ids)
        if not pending_id:
            return None
        params = {"pending_id": pending_id, "terminal": terminal}
        try:
            with self._writes.begin() as connection:
                lock_bundle(connection, pending_id)
                lock_sessions(connection, [resume.session_id])
                marked = _select(connection, "marked", params)
                if not transitions.is_exact_claim(wanted, _rows(marked), terminal):
                    return None
                session = load_session(connection, resume.session_id)
                if session is None:
                    raise NotFound(resource=Resource.SESSION, key=resume.session_id)
                superseded = active_on_current_turn(connection, session.id)
                now = self._clock.now()
                turn = insert_turn(connection, turn_id=self._ids.new_id(), session=session, now=now)
                if self._notifications:  # issue #30: the new turn closes them (no row written)
                    record_superseded(connection, superseded, turn.started_at)
                message = resume.message(session.task_id, turn.id, self._ids.new_id(), now)
                insert_messages(connection, [message])
                # updated_at stays the claim's, so winner and loser report one responded_at.
                changed = [(r, transitions.delivered(r.metadata)) for r in marked]
                written = _rewrite(connection, "finalizable", params, changed, None)
        except _GuardLost:
            return None
        return order_rows(parse_row(r) for r in written)

    def restore_active_bundle(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        wanted = list(claimed_ids)
        if not pending_id or not wanted or len(set(wanted)) != len(wanted):
            return None
        try:
            with self._writes.begin() as connection:
                lock_bundle(connection, pending_id)
                written = self._restore(connection, pending_id, terminal, wanted)
        except _GuardLost:
            return None
        return None if written is None else order_rows(parse_row(r) for r in written)

    def _restore(
        self, connection: Connection, pending_id: str, terminal: str, wanted: Sequence[str]
    ) -> list[MessageRecord] | None:
        params = {"pending_id": pending_id, "terminal": terminal}
        restorable = {r.id: r for r in _select(connection, "restorable", params)}
        picked = [restorable.get(message_id) for message_id in wanted]
        chosen = [record for record in picked if record is not None]
        if len(chosen) != len(picked) or any(parse_row(r).status != terminal for r in chosen):
            return None
        now = self._clock.now()
        changed = [(r, transitions.restored(r.metadata)) for r in chosen]
        written = _rewrite(connection, "restorable_terminal", params, changed, now)
        self._chain_restore(connection, written, now)
        return written

    # -- the audit chain (issue #34): one record per claim and restore, in its transaction --

    def _folds_append(
        self, connection: Connection, answers: int, responses: Mapping[str, Answer] | None
    ) -> bool:
        """Whether the claim's own statement appends its record: on PostgreSQL, when every
        response given is bound in the claim (``answers`` of them), so the statement can
        check that their questions are all among the claimed rows' — which makes the body
        computed beforehand the claimed rows' body. Otherwise :meth:`_chain_resolution`
        appends it after the claim, from the rows it returned."""
        return (
            self._audit_chain
            and connection.dialect.name == "postgresql"
            and answers == len(responses or ())
        )

    def _chain_resolution(
        self,
        connection: Connection,
        rows: Sequence[ClarificationRow],
        terminal: str,
        responses: Mapping[str, Answer] | None,
        resolved_by: ResolvedBy | None,
        now: datetime,
    ) -> None:
        if self._audit_chain:
            entry = ChainEntry.resolution(rows, terminal, responses, resolved_by, now)
            append_record(connection, entry)

    def _chain_restore(
        self, connection: Connection, written: Sequence[MessageRecord], now: datetime
    ) -> None:
        if self._audit_chain and written:
            append_record(connection, ChainEntry.restore(_rows(written), now))

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
        """The bundle's pending current-turn rows in ``session_id`` (any session state) take
        ``status`` and are detached; terminal siblings are left alone (facts §4.3, A9)."""
        if not pending_id:
            return ()
        event = EXPIRED_EVENT if status == EXPIRED else CANCELLED_EVENT
        params: dict[str, Any] = {"session_id": session_id, "pending_id": pending_id}
        params["event_bits"] = self._bits(event)
        return self._session_transition(session_id, "ending", params, transitions.ended(status))

    def detach_active_bundles(self, session_id: str) -> tuple[ClarificationRow, ...]:
        params = {"session_id": session_id}
        return self._session_transition(session_id, "detachable", params, transitions.detached)

    def _session_transition(
        self,
        session_id: str,
        kind: Guard,
        params: dict[str, Any],
        change: Callable[[Mapping[str, Any]], dict[str, Any]],
    ) -> tuple[ClarificationRow, ...]:
        try:
            with self._writes.begin() as connection:
                lock_sessions(connection, [session_id])
                targets = _select(connection, kind, params)
                if not targets:
                    return ()
                now = self._clock.now()
                changed = [(r, change(r.metadata)) for r in targets]
                written = _rewrite(connection, kind, params, changed, now)
        except _GuardLost as exc:
            raise ClaimError(f"session {session_id} changed during a transition") from exc
        return order_rows(parse_row(r) for r in written)

    def reconcile_undelivered(self, older_than: datetime | None = None) -> ReconcileReport:
        """One indexed read finds what is in delivery (``statements.in_delivery``); bundles
        past ``older_than`` are recovered, and younger ones only when every row's process is
        gone (one question to the lease for all of them, issue #28), each in a transaction of
        its own that checks again under the bundle's locks."""
        with read_transaction(self._engine) as connection:
            found = connection.execute(statements.in_delivery()).all()
        in_flight: dict[str, list[tuple[datetime, str | None]]] = {}
        for pending_id, claimed_at, process in found:
            if pending_id:
                in_flight.setdefault(str(pending_id), []).append((claimed_at, process))
        due: list[str] = []
        young: dict[str, set[str]] = {}
        for pending_id, rows in in_flight.items():
            if older_than is None or all(claimed_at <= older_than for claimed_at, _ in rows):
                due.append(pending_id)
            elif all(process is not None for _, process in rows):
                young[pending_id] = {process for _, process in rows if process is not None}
        gone = self._gone(set().union(*young.values())) if young else frozenset()
        due.extend(pending_id for pending_id, processes in young.items() if processes <= gone)
        restored: list[str] = []
        finalized: list[str] = []
        for pending_id in sorted(due):
            outcome = self._reconcile_one(pending_id, older_than, gone)
            if outcome is True:
                restored.append(pending_id)
            elif outcome is False:
                finalized.append(pending_id)
        return ReconcileReport(restored=tuple(restored), finalized=tuple(finalized))

    def _gone(self, processes: set[str]) -> frozenset[str]:
        """The processes among ``processes`` whose lease is free (none without a lease)."""
        if self._lease is None or not processes:
            return frozenset()
        return self._lease.gone(processes)

    def _reconcile_one(
        self, pending_id: str, older_than: datetime | None, gone: frozenset[str]
    ) -> bool | None:
        """Finalize the bundle when its resume record exists (False), else roll its marked
        rows back to pending (True); None when its delivery is younger than ``older_than``,
        was made by a process not in ``gone``, and was left alone."""
        params = {"pending_id": pending_id}
        try:
            with self._writes.begin() as connection:
                lock_bundle(connection, pending_id)
                marked = _select(connection, "marked", params)
                if not marked:
                    return None  # finished meanwhile
                if older_than is not None and any(r.updated_at > older_than for r in marked):
                    processes = connection.execute(statements.delivery_processes(), params)
                    if not all(process in gone for process in processes.scalars()):
                        return None  # a delivery that may still be in flight elsewhere
                delivered = connection.execute(statements.resume_records(), params).first()
                if delivered is not None:
                    changed = [(r, transitions.delivered(r.metadata)) for r in marked]
                    _rewrite(connection, "marked", params, changed, None)
                    return False
                now = self._clock.now()
                changed = [(r, transitions.restored(r.metadata)) for r in marked]
                written = _rewrite(connection, "marked", params, changed, now)
                self._chain_restore(connection, written, now)
        except _GuardLost as exc:
            raise ClaimError(f"clarification bundle {pending_id} changed in recovery") from exc
        return True


__all__ = ["SqlClaimRepository"]


def _load_visible(connection: Connection, pending_id: str, visibility: Visibility) -> Bundle | None:
    """:meth:`SqlClaimRepository.load_visible_bundle` on ``connection``."""
    seen = Seen.of(visibility)
    params = {"pending_id": pending_id, **Seen.parameters(visibility)}
    found = connection.execute(statements.visible_bundle_with_sessions(seen), params).mappings()
    session_tasks = {}
    records = []
    extras: Any = None
    for row in found:
        extras = row
        record = message_record(row)
        records.append(record)
        session_tasks[record.session_id] = row["session_task_id"]
    rows = order_rows(parse_row(record) for record in records)
    if not rows:
        return None
    bundle = make_bundle(pending_id, rows, session_tasks[rows[0].session_id])
    if extras is not None and extras["extras_kind"] is not None:  # issue #33
        bundle = attrs.evolve(
            bundle,
            approval=approvals.approval_record(extras),
            candidates=approvals.read_candidates(connection, pending_id),
        )
    if seen.scoped and len(session_tasks) > 1 and not any(r.task_id for r in rows):
        params = {"task_id": bundle.task_id, **Seen.parameters(visibility)}
        verdict = connection.execute(task_visibility(seen), params).scalar()
        if not verdict:
            return None
    return bundle


def active_on_current_turn(connection: Connection, session_id: str) -> tuple[str, ...]:
    """The pending ids with a pending row on the session's current turn (the workflow
    guard's reading), read in the caller's transaction."""
    records = _select(connection, "session_active", {"session_id": session_id})
    return pending_ids_in_creation_order(_rows(records))
