"""The one resolution operation every answering surface calls (spec "The resolution operation").

Steps: read the bundle by ``pending_id`` and resolve its task (M5) → authorize (any denial is
not-found) → validate (N6–N8b, L16; before the claim and before the loser branch, R2c) →
normalize (N3a, P1b) → **claim** through the repository (P1: the only claim; P2: no pre-check)
→ winner: deliver; loser: re-read once and replay the winner (R2, R2a) or report not-active.

Winner delivery (R7, upstream facts §5.8): to a live waiter, which runs the durable finalize
before the winner is told "delivered"; with no waiter, an answer is handed to the resume
dispatcher with a bounded wait and finalized on acceptance or restored to pending on refusal
(R7a), while a rejection is finalized without resuming anyone (R9). Everything from the claim
on runs shielded from the caller's cancellation, so a caller that hangs up can never leave a
bundle claimed but undelivered.

Approvals (issue #33): a bundle with approval terms resolves through the store's
:meth:`~clarion.ports.claims.ClaimRepository.cast_vote` whatever the surface — a person's
answer is their vote (quorum, veto, idempotent per person); when a vote decides, the claim
commits with it and delivery proceeds exactly as for a question. A vote that does not decide
is reported as :class:`VoteRecorded`. An internal caller (a deadline's default decision) is no
voter: it claims as for any question. Only candidates may resolve an assigned bundle; to anyone
else it is not found.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any, NoReturn

import anyio
import attrs
import structlog

from clarion.app.usecases.access import Assignment, GroupsOf, authorize_bundle
from clarion.app.usecases.publishing import (
    BUNDLE_RESOLVED,
    BUNDLE_RESTORED,
    publish,
    publish_bundles,
    publish_superseded,
    session_event,
)
from clarion.app.usecases.receipts import Receipts
from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.approvals import (
    Decision,
    StandingApproval,
    Vote,
    decision_of,
    decision_outcome,
)
from clarion.domain.errors import (
    NOT_ACTIVE_MESSAGE,
    NOT_FOUND_MESSAGE,
    ClarionError,
    DeliveryError,
    NotActive,
    NotFound,
    ValidationError,
    failure_fields,
)
from clarion.domain.model import ANSWERED, REJECTED, Identity, Outcome, Resolution, ResolutionStatus
from clarion.domain.outcome import normalize_outcome, responses_by_question, validate_outcome
from clarion.domain.prompts import answer_summary, question_summary, resume_prompt
from clarion.domain.replay import replay_winner
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface
from clarion.domain.rows import Bundle, ClarificationRow
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository, ClaimResult, LiveDelivery, VoteResult
from clarion.ports.events import EventPublisher
from clarion.ports.resume import ResumeDispatcher, ResumeRequest
from clarion.ports.telemetry import Metrics, NoMetrics, NoTracer, Tracer
from clarion.ports.waiters import ConfirmationFailed, Delivery, Waiters

log = structlog.get_logger(__name__)

DELIVERY_TIMEOUT_S = 30.0  # a live waiter must take the answer within this
RESUME_TIMEOUT_S = 30.0  # the bounded wait for a detached resume (facts §4.7)

CLAIM_FAILED = "failed to update clarification state"
REREAD_FAILED = "failed to determine clarification outcome"
LIVE_RETRYABLE = "failed to deliver clarification response; response can be retried"
LIVE_STUCK = "failed to deliver clarification response and recover pending clarification state"
RESUME_RETRYABLE = "failed to resume clarification; response can be retried"
RESUME_STUCK = "failed to resume clarification and recover pending clarification state"
RESUME_UNFINALIZED = (
    "clarification response was accepted, but delivery state could not be finalized"
)
REJECTION_UNFINALIZED = (
    "clarification rejection was recorded, but delivery state could not be finalized"
)
CONFIRMATION_FAILED = "clarification delivery confirmation failed"
VOTE_FAILED = "failed to record approval vote"


class VoteRecorded(ClarionError):
    """An approval vote was recorded (or was a repeat: ``counted`` False) and did not decide:
    the request still waits for ``required`` approvals and has ``approvals`` (issue #33).
    Surfaces that answer a bundle tell their caller so (REST respond: 202)."""

    def __init__(self, pending_id: str, result: VoteResult) -> None:
        super().__init__(
            f"approval vote recorded: {result.approvals} of {result.required} approvals"
        )
        self.pending_id = pending_id
        self.result = result

    @property
    def counted(self) -> bool:
        return not self.result.repeated


@attrs.frozen
class VoteOutcome:
    """A vote as :meth:`Resolver.vote` reports it: the store's result, and the request's
    resolution when it is decided — delivered by this vote (``claimed``), or the earlier
    decision replayed; None while the request still waits for votes."""

    result: VoteResult
    resolution: Resolution | None


@attrs.define(kw_only=True)
class Resolver:
    """``ResolveBundle``: one instance, shared by REST and MCP (N2)."""

    _claims: ClaimRepository = attrs.field(alias="claims")
    _authorizer: TaskAuthorizer = attrs.field(alias="authorizer")
    _waiters: Waiters = attrs.field(alias="waiters")
    _dispatcher: ResumeDispatcher = attrs.field(alias="dispatcher")
    _events: EventPublisher = attrs.field(alias="events")
    _run: Runner = attrs.field(alias="runner")
    _delivery_timeout: float = attrs.field(default=DELIVERY_TIMEOUT_S, alias="delivery_timeout")
    _resume_timeout: float = attrs.field(default=RESUME_TIMEOUT_S, alias="resume_timeout")
    _metrics: Metrics = attrs.field(factory=NoMetrics, alias="metrics")
    _tracer: Tracer = attrs.field(factory=NoTracer, alias="tracer")
    # Issue #34: signs the receipt a resume record carries (None: resumes carry none).
    _receipts: Receipts | None = attrs.field(default=None, alias="receipts")
    # Issue #33: a user's groups, for assigned bundles (None: no groups are kept).
    _groups_of: GroupsOf | None = attrs.field(default=None, alias="groups_of")

    async def authorize_bundle(self, identity: Identity, pending_id: str) -> Bundle:
        """Steps 1–2 only (A7–A9): the bundle, when ``identity`` may see it and — for a
        bundle with candidates — is one of them (issue #33).

        Raises:
            NotFound: no durable rows, a foreign bundle, M5a for a scoped caller, or a caller
                who is not a candidate of an assigned bundle.
            ClaimError: the store failed (never reported as not-found).
        """
        return await authorize_bundle(
            self._run,
            self._claims,
            self._authorizer,
            identity,
            pending_id,
            Assignment(groups_of=self._groups_of),
        )

    async def resolve(
        self, identity: Identity, pending_id: str, outcome: Outcome, *, surface: Surface
    ) -> Resolution:
        """Resolve the bundle with ``outcome``; the winner's resolution has ``claimed=True``,
        a loser's replay of the winner has ``claimed=False`` (R2). The claim records who
        resolved — ``identity`` on ``surface`` (issue #20) — so only a winner is ever recorded.

        Raises:
            NotFound: unknown or foreign ``pending_id`` (A1, A3, A5).
            InvalidOutcome: the outcome does not fit the bundle (N6–N8b, L16), even when the
                bundle is already resolved (R2c).
            NotActive: not active and nobody won (R2 second branch).
            ClaimError: the claim or the re-read failed (R4a).
            DeliveryError: the winner's delivery failed (R7a); ``retryable`` says whether the
                bundle is answerable again.
        """
        span = self._tracer.span
        with span("clarion.resolve", pending_id=pending_id, surface=surface.value):
            with span("clarion.authorize", pending_id=pending_id):
                bundle = await self.authorize_bundle(identity, pending_id)
            questions = bundle.questions
            with span("clarion.validate", pending_id=pending_id):
                try:
                    validate_outcome(questions, outcome)
                except ValidationError:
                    self._metrics.validation_refused("answer")
                    raise
                terminal, normalized = normalize_outcome(questions, outcome)
            resolved_by = ResolvedBy.of(identity, surface)
            if bundle.approval is not None and identity.user_id is not None:
                decision, comment = decision_of(normalized)
                voted = await self._vote(bundle, identity, decision, comment, surface)
                if voted.resolution is None:
                    raise VoteRecorded(pending_id, voted.result)
                return voted.resolution
            # From the claim on, the caller going away must not interrupt the work (§5.3).
            with anyio.CancelScope(shield=True):
                resolution = await self._claim_and_deliver(
                    bundle, terminal, normalized, resolved_by
                )
        return resolution

    async def vote(
        self,
        identity: Identity,
        pending_id: str,
        decision: Decision,
        comment: str,
        *,
        surface: Surface,
    ) -> VoteOutcome:
        """Cast ``identity``'s vote on the approval ``pending_id`` (issue #33): recorded once
        per person; the vote that reaches the quorum (or any deny) decides, and the decision
        is delivered as an answer would be. A voter after the decision is told it.

        Raises:
            NotFound: unknown, foreign, or not an approval; or the caller is not a candidate.
            ValidationError: ``identity`` is an internal caller (no person to record), or the
                comment does not fit the question (N8).
            NotActive: the request closed without a decision (superseded, expired, ...).
            ClaimError, DeliveryError: as :meth:`resolve`.
        """
        if identity.user_id is None:
            raise ValidationError("an internal caller cannot vote", field="decision")
        bundle = await self.authorize_bundle(identity, pending_id)
        if bundle.approval is None:
            raise NotFound(NOT_FOUND_MESSAGE)
        outcome = decision_outcome(decision, comment)
        validate_outcome(bundle.questions, outcome)
        return await self._vote(bundle, identity, decision, comment, surface)

    async def _vote(
        self,
        bundle: Bundle,
        identity: Identity,
        decision: Decision,
        comment: str,
        surface: Surface,
    ) -> VoteOutcome:
        """The vote and — when it decides — the claim, in the store's one transaction; then
        delivery (a winner) or the replay (decided before: the later voter is told).

        Raises:
            ValidationError: ``identity`` is an agent's session token: an agent never decides
                an approval (it would approve its own action).
        """
        if identity.kind == IdentityKind.AGENT:
            raise ValidationError(
                "an agent's session token cannot decide an approval request; a person does",
                field="decision",
            )
        pending_id = bundle.pending_id
        resolved_by = ResolvedBy.of(identity, surface)
        vote = Vote(
            voter_id=identity.user_id or "",
            display_name=identity.display_name,
            decision=decision,
            comment=comment,
            surface=surface,
        )
        with anyio.CancelScope(shield=True):
            with self._tracer.span("clarion.vote", pending_id=pending_id):
                result = await self._run.guarded(
                    StoreFailure(VOTE_FAILED, pending_id=pending_id),
                    self._claims.cast_vote,
                    pending_id,
                    vote,
                    resolved_by=resolved_by,
                )
            log.info(
                "approval.vote",
                pending_id=pending_id,
                decision=decision.value,
                repeated=result.repeated,
                decided=result.decision.value if result.decision is not None else "",
            )
            if result.claim is not None and result.decision is not None:
                normalized = decision_outcome(result.decision, comment)
                resolution = await self._won(
                    bundle, result.claim, ANSWERED, normalized, resolved_by
                )
                return VoteOutcome(result, resolution)
            if result.decision is not None or (result.vote is None and not result.repeated):
                # Decided before this vote, or closed without a decision (NotActive).
                return VoteOutcome(result, await self._replay(pending_id))
        return VoteOutcome(result, None)

    async def decide_at_once(self, bundle: Bundle, standing: StandingApproval) -> Resolution:
        """Issue #33: approve a request the moment it is made, by the ``standing`` approval
        that matched it: the one claim, recorded as decided by the standing approval. An asker
        already waiting live on the request is woken as by any answer; otherwise the delivery
        is finalized at once and nobody is resumed — the asker receives the decision in its
        own reply. A request someone decided first replays that decision.

        Raises:
            NotActive: the request closed without a decision.
            ClaimError, DeliveryError: as :meth:`resolve`.
        """
        pending_id = bundle.pending_id
        with anyio.CancelScope(shield=True):
            result = await self._run.guarded(
                StoreFailure(CLAIM_FAILED, pending_id=pending_id),
                self._claims.approve_by_standing,
                pending_id,
                standing,
            )
            if not result.claimed:
                resolution = await self._replay(pending_id)
            else:
                normalized = decision_outcome(Decision.APPROVE, "")
                resolution = await self._won(
                    bundle, result, ANSWERED, normalized, standing.resolver(), resume=False
                )
        return resolution

    async def _claim_and_deliver(
        self,
        bundle: Bundle,
        terminal: ResolutionStatus,
        normalized: Outcome,
        resolved_by: ResolvedBy,
    ) -> Resolution:
        pending_id = bundle.pending_id
        with self._tracer.span("clarion.claim", pending_id=pending_id):
            result = await self._run.guarded(
                StoreFailure(CLAIM_FAILED, pending_id=pending_id),
                self._claims.complete_active_bundle,
                pending_id,
                terminal,
                responses_by_question(normalized),
                resolved_by=resolved_by,
            )
        if not result.claimed:
            self._metrics.claim_lost(resolved_by.surface.value)
            return await self._replay(pending_id)
        return await self._won(bundle, result, terminal, normalized, resolved_by)

    async def _won(
        self,
        bundle: Bundle,
        result: ClaimResult,
        terminal: ResolutionStatus,
        normalized: Outcome,
        resolved_by: ResolvedBy,
        *,
        resume: bool = True,
    ) -> Resolution:
        """The winner's part: deliver (live wake; else resume, or with ``resume`` False only
        finalize) and count it."""
        pending_id = bundle.pending_id
        resolution = Resolution(
            pending_id=pending_id,
            status=terminal,
            answers=normalized.answers,
            rejected=normalized.rejected,
            reject_reason=normalized.reject_reason,
            responded_at=_responded_at(result),
            claimed=True,
        )
        log.info("clarification.won", pending_id=pending_id, status=terminal)
        with self._tracer.span("clarion.deliver", pending_id=pending_id):
            await self._deliver(bundle, result, resolution, resolved_by, resume=resume)
        waited = (resolution.responded_at - bundle.created_at).total_seconds()
        self._metrics.bundle_resolved(terminal, resolved_by.surface.value, max(0.0, waited))
        return resolution

    async def _replay(self, pending_id: str) -> Resolution:
        """R2/R2a: one re-read, never retried; whatever it shows is what the loser is told —
        with no winner, why the bundle closed as that same read shows it (issue #30)."""
        reread = await self._run.guarded(
            StoreFailure(REREAD_FAILED, pending_id=pending_id),
            self._claims.reread_bundle,
            pending_id,
        )
        bundle = reread.bundle
        winner = replay_winner(pending_id, bundle.rows if bundle is not None else ())
        if winner is None:
            closed = reread.closed
            reason = closed[0] if closed is not None else ""
            log.info("clarification.late_answer", pending_id=pending_id, closed_reason=reason)
            raise NotActive(NOT_ACTIVE_MESSAGE, closed_reason=reason)
        return winner

    async def _deliver(
        self,
        bundle: Bundle,
        result: ClaimResult,
        resolution: Resolution,
        resolved_by: ResolvedBy,
        *,
        resume: bool,
    ) -> None:
        pending_id, task_id = bundle.pending_id, bundle.task_id
        finalized: list[LiveDelivery] = []

        async def confirm() -> None:
            # The asker took the answer: its delivery and the asking session's return to
            # RUNNING commit together (the waking agent writes nothing more).
            live = await self._run(
                self._claims.finalize_live_delivery,
                pending_id,
                resolution.status,
                result.claimed_ids,
            )
            if live is None:
                raise ConfirmationFailed(CONFIRMATION_FAILED)
            finalized.append(live)

        delivery = await self._waiters.deliver(
            pending_id, resolution, confirm, self._delivery_timeout
        )
        if delivery.outcome is Delivery.DELIVERED:
            for live in finalized:
                publish_bundles(self._events, BUNDLE_RESOLVED, live.rows, task_id)
                if live.session is not None:
                    publish(self._events, session_event(live.session))
            return
        if delivery.outcome is Delivery.FAILED:
            log.warning("clarification.live_delivery_failed", pending_id=pending_id)
            await self._restore_or_raise(bundle, result, resolution, LIVE_RETRYABLE, LIVE_STUCK)
        if resolution.status == REJECTED or not resume:
            # R9: a detached rejection is recorded and resumes nobody (nor does a decision
            # its asker receives in its own reply, issue #33).
            await self._finalize_or_raise(bundle, result, resolution, REJECTION_UNFINALIZED)
            return
        await self._resume(bundle, result, resolution, resolved_by)

    async def _resume(
        self,
        bundle: Bundle,
        result: ClaimResult,
        resolution: Resolution,
        resolved_by: ResolvedBy,
    ) -> None:
        """The detached path for an answer: dispatch with a bounded wait (facts §4.7); the
        resume carries the claim's receipt (issue #34) when receipts are signed."""
        questions = bundle.questions
        prompt = resume_prompt(
            question_summary(questions),
            answer_summary(questions, resolution.answers, rejected=False, reject_reason=""),
            rejected=False,
            reject_reason="",
        )
        request = ResumeRequest(
            task_id=bundle.task_id,  # M5-resolved (fixes §9.28)
            session_id=bundle.session_id,
            pending_id=bundle.pending_id,
            turn_id=result.rows[0].turn_id if result.rows else "",
            prompt=prompt,
            answers=resolution.answers,
            rejected=False,
            claimed_ids=result.claimed_ids,
            claimed_at=resolution.responded_at,
            receipt=await self._claim_receipt(bundle, resolution, resolved_by),
        )
        # Issue #30: a resume starts a new turn, which closes the session's other active
        # bundles; read them first to say so (the store records their notification events
        # with the turn itself).
        others = await self._run.guarded(
            StoreFailure(CLAIM_FAILED, pending_id=bundle.pending_id),
            self._claims.active_pending_ids,
            bundle.session_id,
        )
        try:
            with anyio.fail_after(self._resume_timeout):
                finalized = await self._dispatcher.dispatch(request)
        except Exception as exc:  # noqa: BLE001 - refused, timed out or broken: roll back either way (R7)
            log.warning(
                "clarification.resume_refused", pending_id=bundle.pending_id, **failure_fields(exc)
            )
            self._metrics.resume_dispatched("refused")
            await self._restore_or_raise(bundle, result, resolution, RESUME_RETRYABLE, RESUME_STUCK)
        log.info("clarification.resume_accepted", pending_id=bundle.pending_id)
        self._metrics.resume_dispatched("accepted")
        if finalized is not None:
            # The dispatcher finalized the claim together with its resume record (the outbox)
            # on a new turn, which superseded the session's other active bundles.
            publish_bundles(self._events, BUNDLE_RESOLVED, finalized, bundle.task_id)
            publish_superseded(
                self._events,
                [pending_id for pending_id in others if pending_id != bundle.pending_id],
                task_id=bundle.task_id,
                session_id=bundle.session_id,
            )
            return
        await self._finalize_or_raise(bundle, result, resolution, RESUME_UNFINALIZED)

    async def _claim_receipt(
        self, bundle: Bundle, resolution: Resolution, resolved_by: ResolvedBy
    ) -> dict[str, Any] | None:
        """The claim's receipt for its resume record; None without receipts, or when signing
        failed (logged): a receipt never stands between an answer and its agent."""
        if self._receipts is None:
            return None
        try:
            return await self._receipts.of_claim(
                bundle,
                resolution.status,
                resolution.answers,
                resolved_by,
                resolution.responded_at,
            )
        except Exception as exc:  # noqa: BLE001 - the resume goes out without its receipt
            log.error(
                "clarification.receipt_failed", pending_id=bundle.pending_id, **failure_fields(exc)
            )
            return None

    async def _finalize_or_raise(
        self, bundle: Bundle, result: ClaimResult, resolution: Resolution, message: str
    ) -> None:
        """Mark the claimed rows delivered, or report the failure as ``message``."""
        await self._settle_claim(
            self._claims.finalize_delivery,
            "clarification.finalize_failed",
            BUNDLE_RESOLVED,
            bundle,
            result,
            resolution,
            message,
        )

    async def _restore_or_raise(
        self,
        bundle: Bundle,
        result: ClaimResult,
        resolution: Resolution,
        retryable: str,
        stuck: str,
    ) -> NoReturn:
        """Roll the claim back so the bundle is answerable again, then report the failure."""
        await self._settle_claim(
            self._claims.restore_active_bundle,
            "clarification.restore_failed",
            BUNDLE_RESTORED,
            bundle,
            result,
            resolution,
            stuck,
        )
        raise DeliveryError(retryable, retryable=True)

    async def _settle_claim(
        self,
        settle: Callable[[str, str, Collection[str]], tuple[ClarificationRow, ...] | None],
        failed_event: str,
        kind: str,
        bundle: Bundle,
        result: ClaimResult,
        resolution: Resolution,
        message: str,
    ) -> None:
        """Run ``settle`` (finalize or restore) on the claimed rows and publish a ``kind`` event
        for them; a store failure (logged as ``failed_event``) or nothing written raises the
        non-retryable ``message``."""
        try:
            rows = await self._run(settle, bundle.pending_id, resolution.status, result.claimed_ids)
        except Exception as exc:  # noqa: BLE001 - reported below as the non-retryable delivery error
            log.error(failed_event, pending_id=bundle.pending_id, **failure_fields(exc))
            rows = None
        if rows is None:
            raise DeliveryError(message, retryable=False)
        publish_bundles(self._events, kind, rows, bundle.task_id)


def _responded_at(result: ClaimResult) -> datetime:
    """The claim's committed timestamp, which a loser also reads back (§5.6, fixes §9.18)."""
    if result.responded_at is not None:
        return result.responded_at
    return max(row.updated_at for row in result.rows)
