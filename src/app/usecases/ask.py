"""Asking: creating a bundle and the blocking ask (upstream facts §2.3–§2.8, §3, §4.9). The live
request, its wait and its cancel are :mod:`clarion.app.usecases.live`.

An asking agent's wait is a suspended task on one event (no thread). The agent starts waiting
*before* its bundle becomes durable, so no answer can slip past it onto the detached path.
When its wait ends without an answer (timeout, its caller went away, delivery failed) the
bundle is marked detached and stays answerable: the answer then resumes the agent through the
resume dispatcher (facts §4.9).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime

import anyio
import attrs
import structlog

from clarion.app.usecases.access import authorize_bundle, load_authorized_session
from clarion.app.usecases.live import ASK_TIMEOUT_S
from clarion.app.usecases.publishing import (
    BUNDLE_CREATED,
    BUNDLE_DETACHED,
    publish,
    publish_bundles,
    session_event,
)
from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.approvals import (
    NO_CANDIDATES,
    ApprovalTerms,
    Candidates,
    approval_question,
)
from clarion.domain.errors import (
    NOT_FOUND_MESSAGE,
    ClarionError,
    InvalidArgument,
    LimitExceeded,
    NotActive,
    NotFound,
    ValidationError,
    failure_fields,
)
from clarion.domain.host import Session
from clarion.domain.limits import Limits, session_limit_reached, validate_context
from clarion.domain.model import (
    Answer,
    Identity,
    Question,
    Resolution,
    SessionState,
    is_terminal_state,
)
from clarion.domain.questions import QuestionDraft, validate_questions
from clarion.domain.replay import replay_winner
from clarion.domain.rows import ASKED_BY_ASK, ASKED_BY_REQUEST, Asker
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.events import EventPublisher
from clarion.ports.host import HostRepository
from clarion.ports.system import IdGenerator
from clarion.ports.telemetry import Metrics, NoMetrics
from clarion.ports.waiters import WaitEnd, WaitEnded, Waiters

log = structlog.get_logger(__name__)

PROGRESS_INTERVAL_S = 15.0
CREATE_FAILED = "failed to create clarification messages"
REJOIN_FAILED = "failed to load clarification request"

ProgressCallback = Callable[[int], Awaitable[None]]
# Another surface offering a bundle while its asker waits: called with the pending id and the
# questions once the bundle is durable; returns what the resolver said to its answer, if any.
Alongside = Callable[[str, tuple[Question, ...]], Awaitable[Resolution | None]]
# Called with the pending id and session id once an ask knows its bundle (a new one, or an
# identical live one it reuses, §2.7), before anything is written for it: a caller recording
# the ask (clarion.app.usecases.agent_asks) raises to stop it.
OnBundle = Callable[[str, str], Awaitable[None]]


@attrs.frozen
class BundleExtras:
    """What a bundle carries beside its rows (issue #33), written in the same transaction:
    an approval request's terms — its one question is then
    :func:`~clarion.domain.approvals.approval_question`, built here, and the drafts given are
    ignored — and the candidates who may decide it (assignment, also for plain questions)."""

    approval: ApprovalTerms | None = None
    candidates: Candidates = NO_CANDIDATES


@attrs.frozen
class AskResult:
    """What the asking agent receives: every selected option of every answer (fixes §9.25)."""

    pending_id: str
    questions: tuple[Question, ...]
    answers: Mapping[str, Answer]  # question id → answer, in question order
    rejected: bool
    reject_reason: str
    responded_at: datetime

    @classmethod
    def from_resolution(cls, questions: Sequence[Question], resolution: Resolution) -> AskResult:
        return cls(
            pending_id=resolution.pending_id,
            questions=tuple(questions),
            answers={answer.question_id: answer for answer in resolution.answers},
            rejected=resolution.rejected,
            reject_reason=resolution.reject_reason,
            responded_at=resolution.responded_at,
        )


@attrs.frozen
class _Prepared:
    session: Session
    pending_id: str
    is_new: bool


@attrs.define
class _LiveWait:
    """One live wait on a bundle (:meth:`Asking._wait_live`): what it was given, and what the
    task preparing and offering the bundle beside it reports back."""

    session: Session
    pending_id: str
    questions: tuple[Question, ...]
    before: Callable[[], Awaitable[bool]]
    alongside: Alongside | None
    replays_end_the_wait: bool
    # An error from ``before()``: it ends the wait and is raised to the asker.
    failures: list[BaseException] = attrs.field(factory=list)
    # What ended the wait in place of a delivery: a replay, or None (nobody won).
    settled: list[Resolution | None] = attrs.field(factory=list)


@attrs.define
class Asking:
    """Creating bundles and waiting on them: the blocking asks of agents and REST's create.
    The operations on a bundle an agent waits on (get, wait, cancel) are :class:`LiveRequests`;
    who asked is stored with the bundle (:class:`~clarion.domain.rows.Asker`)."""

    _claims: ClaimRepository = attrs.field(alias="claims")
    _host: HostRepository = attrs.field(alias="host")
    _authorizer: TaskAuthorizer = attrs.field(alias="authorizer")
    _waiters: Waiters = attrs.field(alias="waiters")
    _events: EventPublisher = attrs.field(alias="events")
    _ids: IdGenerator = attrs.field(alias="ids")
    _run: Runner = attrs.field(alias="runner")
    ask_timeout: float = ASK_TIMEOUT_S
    limits: Limits = attrs.field(factory=Limits)
    _metrics: Metrics = attrs.field(factory=NoMetrics, alias="metrics")
    _asking: set[str] = attrs.field(factory=set, init=False)  # asks blocked in this process
    _closing: bool = attrs.field(default=False, init=False)

    def begin_shutdown(self) -> None:
        """End every blocked ask now, as a process stopping must: each bundle detaches and
        stays answerable (the answer then resumes the agent), and each agent gets its call
        back at once with a CANCELLED wait instead of a dropped connection."""
        self._closing = True
        for pending_id in sorted(self._asking):
            self._waiters.cancel(pending_id)

    # -- creation --------------------------------------------------------------------------

    def _prepare(
        self,
        identity: Identity,
        session_id: str,
        questions: Sequence[Question],
        task_id: str | None,
    ) -> _Prepared:
        """Authorize the session (fixes §9.20) and find an identical live bundle (§2.7)."""
        session = load_authorized_session(self._host, self._authorizer, identity, session_id)
        if task_id and task_id != session.task_id:
            raise InvalidArgument("task_id does not match the session's task", field="task_id")
        if is_terminal_state(session.state):
            raise NotActive("session is no longer active")
        duplicate = self._claims.find_active_duplicate(session.id, questions)
        if duplicate is not None:
            return _Prepared(session=session, pending_id=duplicate, is_new=False)
        self._check_room(identity, session.id)
        return _Prepared(session=session, pending_id=self._ids.new_id(), is_new=True)

    def _check_room(self, identity: Identity, session_id: str | None) -> None:
        """Refuse a new bundle when the session (unless None), or the active bundles
        ``identity`` asked, already number as many as the limits allow (checked before
        anything is written; one read, issues #14, #15). An unscoped identity (auth disabled:
        every agent is the same synthetic identity) has both limits applied to the session's
        own bundles, so one agent's backlog never refuses another agent's ask (#29 S9)."""
        per_session = self.limits.max_active_bundles_per_session
        per_identity = self.limits.max_active_bundles_per_identity
        if identity.is_scoped:
            reached = self._claims.active_limit_reached(
                session_id, per_session, identity.user_id, per_identity
            )
        else:  # #29 S9: unscoped (auth off) — the identity's bucket is the session, not all
            bound = max(per_session, per_identity)
            count = self._claims.count_active_in_session(session_id, bound) if session_id else 0
            reached = session_limit_reached(count, per_session, per_identity)
        if reached == "session":
            raise LimitExceeded(
                "too many active clarification requests in this session: the limit is "
                f"{per_session} (CLARION_MAX_ACTIVE_BUNDLES_PER_SESSION)",
                limit="CLARION_MAX_ACTIVE_BUNDLES_PER_SESSION",
            )
        if reached == "identity":
            raise LimitExceeded(
                "too many active clarification requests for this identity: the limit is "
                f"{per_identity} (CLARION_MAX_ACTIVE_BUNDLES_PER_IDENTITY)",
                limit="CLARION_MAX_ACTIVE_BUNDLES_PER_IDENTITY",
            )

    async def check_first_ask(
        self,
        identity: Identity,
        drafts: Sequence[QuestionDraft],
        context: str,
        *,
        context_paragraphs: Sequence[str] = (),
    ) -> None:
        """Refuse, before a session exists, what :meth:`ask` would refuse as a new session's
        first bundle: a malformed question set, a text over its limit, or an identity already
        at its active-bundle limit. A caller that creates sessions on demand checks this first,
        so no session is created for an ask that could not be made.

        Raises:
            InvalidQuestions: the question set is malformed, or a text is over its limit.
            LimitExceeded: the identity has too many active bundles.
            ClaimError: the store failed.
        """
        self._validated(drafts, context, context_paragraphs)
        await self._run.guarded(CREATE_FAILED, self._check_room, identity, None)

    def _validated(
        self,
        drafts: Sequence[QuestionDraft],
        context: str,
        context_paragraphs: Sequence[str],
        extras: BundleExtras | None = None,
    ) -> tuple[tuple[Question, ...], str]:
        try:
            if extras is not None and extras.approval is not None:
                # Bounded by the approval's own limits (validate_terms), not a draft's.
                questions: tuple[Question, ...] = (approval_question(extras.approval),)
            else:
                questions = validate_questions(drafts, self.limits)
            return questions, validate_context(context, self.limits, context_paragraphs)
        except ValidationError:
            self._metrics.validation_refused("ask")
            raise

    @property
    def live_asks(self) -> int:
        """How many asks are blocked waiting in this process right now."""
        return len(self._asking)

    async def _make_durable(
        self,
        prepared: _Prepared,
        questions: Sequence[Question],
        context: str,
        asker: Asker,
        extras: BundleExtras | None,
    ) -> None:
        if not prepared.is_new:
            return
        extras = extras if extras is not None else BundleExtras()
        bundle = await self._run.guarded(
            StoreFailure(CREATE_FAILED, pending_id=prepared.pending_id),
            self._claims.create_bundle,
            pending_id=prepared.pending_id,
            session_id=prepared.session.id,
            task_id=prepared.session.task_id,
            questions=questions,
            context=context,
            asker=asker,
            approval=extras.approval,
            candidates=extras.candidates,
        )
        log.info("clarification.created", pending_id=prepared.pending_id)
        self._metrics.bundle_created()
        publish_bundles(self._events, BUNDLE_CREATED, bundle.rows, prepared.session.task_id)

    async def create(
        self,
        identity: Identity,
        session_id: str,
        drafts: Sequence[QuestionDraft],
        context: str,
        task_id: str | None = None,
        *,
        context_paragraphs: Sequence[str] = (),
        extras: BundleExtras | None = None,
    ) -> str:
        """``POST /request``: create (or reuse, §2.7) a bundle and return its ``pending_id``.
        Does not block and does not change the session's state (facts §2.4). Non-empty
        ``context_paragraphs`` replace ``context`` (joined with blank lines); ``extras`` are
        written with the rows (issue #33).

        Raises:
            InvalidQuestions: the question set is malformed, or a text is over its limit.
            LimitExceeded: the session or the identity has too many active bundles.
            InvalidArgument: ``task_id`` is not the session's task.
            NotFound: the session does not exist or ``identity`` may not see it.
            NotActive: the session is COMPLETED, FAILED or CANCELLED.
            ClaimError: the store failed.
        """
        questions, context = self._validated(drafts, context, context_paragraphs, extras)
        prepared = await self._run.guarded(
            CREATE_FAILED, self._prepare, identity, session_id, questions, task_id
        )
        self._waiters.register(prepared.pending_id, prepared.session.id)
        try:
            await self._make_durable(
                prepared, questions, context, _asker(identity, ASKED_BY_REQUEST), extras
            )
        except BaseException:
            self._waiters.cancel(prepared.pending_id)
            raise
        return prepared.pending_id

    # -- the blocking ask ------------------------------------------------------------------

    async def ask(
        self,
        identity: Identity,
        session_id: str,
        drafts: Sequence[QuestionDraft],
        context: str,
        *,
        context_paragraphs: Sequence[str] = (),
        on_progress: ProgressCallback | None = None,
        progress_interval: float = PROGRESS_INTERVAL_S,
        alongside: Alongside | None = None,
        on_bundle: OnBundle | None = None,
        extras: BundleExtras | None = None,
    ) -> AskResult:
        """``ask_user_question``: create the bundle, mark the session WAITING_FOR_INPUT, wait
        until answered or rejected, mark it RUNNING again, return the answers. While waiting,
        ``on_progress(n)`` is called every ``progress_interval`` seconds.

        ``alongside(pending_id, questions)``, when given, runs once the bundle is durable and
        for as long as the wait lasts (it is cancelled when the wait ends): another surface
        offering the same bundle, whose answer goes through the resolver like any other and
        reaches this wait as a live delivery. ``on_bundle`` runs once the pending id is known,
        before anything is written (an exception from it ends the ask with nothing created).
        ``extras`` are written with the rows (issue #33: an approval request's blocking ask).

        Raises:
            InvalidQuestions, LimitExceeded, InvalidArgument, NotFound, NotActive, ClaimError:
                as :meth:`create`.
            WaitEnded: the wait ended without an answer (timeout, cancelled, turn completed,
                delivery failed); the bundle stays answerable through the resume path.
        """
        questions, context = self._validated(drafts, context, context_paragraphs, extras)
        prepared = await self._run.guarded(
            CREATE_FAILED, self._prepare, identity, session_id, questions, None
        )
        if on_bundle is not None:
            await on_bundle(prepared.pending_id, prepared.session.id)

        async def make_visible() -> bool:
            asker = _asker(identity, ASKED_BY_ASK)
            await self._make_durable(prepared, questions, context, asker, extras)
            await self._set_state(
                prepared.session.id,
                SessionState.WAITING_FOR_INPUT,
                expected=(SessionState.STARTING, SessionState.RUNNING),
            )
            return True

        wait = _LiveWait(
            prepared.session,
            prepared.pending_id,
            questions,
            make_visible,
            alongside,
            replays_end_the_wait=False,
        )
        return await self._wait_live(wait, on_progress, progress_interval)

    async def offer(
        self,
        identity: Identity,
        session_id: str,
        drafts: Sequence[QuestionDraft],
        context: str,
        *,
        context_paragraphs: Sequence[str] = (),
        on_bundle: OnBundle | None = None,
    ) -> tuple[str, tuple[Question, ...]]:
        """The first round of an ask whose answer comes back in a later call (the 2026-07-28
        MCP ``input_required`` round): create (or reuse, §2.7) the bundle, mark the session
        WAITING_FOR_INPUT and leave the bundle detached — nobody waits on it until
        :meth:`rejoin`, so an answer given meanwhile resumes the agent through the dispatcher
        (facts §4.9). Returns the pending id and the questions with their option ids.
        ``on_bundle`` runs as in :meth:`ask`.

        Raises:
            InvalidQuestions, LimitExceeded, InvalidArgument, NotFound, NotActive, ClaimError:
                as :meth:`create`.
        """
        questions, context = self._validated(drafts, context, context_paragraphs)
        prepared = await self._run.guarded(
            CREATE_FAILED, self._prepare, identity, session_id, questions, None
        )
        if on_bundle is not None:
            await on_bundle(prepared.pending_id, prepared.session.id)
        await self._make_durable(prepared, questions, context, _asker(identity, ASKED_BY_ASK), None)
        await self._set_state(
            prepared.session.id,
            SessionState.WAITING_FOR_INPUT,
            expected=(SessionState.STARTING, SessionState.RUNNING),
        )
        with anyio.CancelScope(shield=True):
            await self._after_abandoned_wait(prepared.session)
        return prepared.pending_id, questions

    async def rejoin(
        self,
        identity: Identity,
        session_id: str,
        pending_id: str,
        *,
        on_progress: ProgressCallback | None = None,
        progress_interval: float = PROGRESS_INTERVAL_S,
        alongside: Alongside | None = None,
    ) -> AskResult:
        """Wait again, in a later call, on a bundle :meth:`offer` created in ``session_id``:
        like :meth:`ask` from the point where the bundle is durable. A bundle settled in the
        meantime returns the winner's answer at once (the replay, R2b); ``alongside`` runs as
        in :meth:`ask`, and a replay it receives (it lost the claim) ends the wait with the
        winner's answer unless that answer is already being delivered to this wait.

        Raises:
            NotFound: no such bundle in ``session_id``, or ``identity`` may not see it (the
                same answer for each, A5a).
            ClaimError: the store failed.
            WaitEnded: as :meth:`ask`; CANCELLED also when the bundle is no longer active and
                nobody answered it (a newer turn, a terminal session, an operator cancel).
        """
        bundle = await authorize_bundle(
            self._run, self._claims, self._authorizer, identity, pending_id
        )
        if bundle.session_id != session_id:
            raise NotFound(NOT_FOUND_MESSAGE)
        session = await self._run.guarded(
            REJOIN_FAILED,
            load_authorized_session,
            self._host,
            self._authorizer,
            identity,
            session_id,
        )

        async def still_active() -> bool:
            active = await self._run(self._claims.active_pending_ids, session.id)
            return pending_id in active

        wait = _LiveWait(
            session,
            pending_id,
            bundle.questions,
            still_active,
            alongside,
            replays_end_the_wait=True,
        )
        return await self._wait_live(wait, on_progress, progress_interval)

    async def _wait_live(
        self, wait: _LiveWait, on_progress: ProgressCallback | None, progress_interval: float
    ) -> AskResult:
        """Register and wait on ``wait.pending_id``; ``wait.before()`` runs once this task
        already waits (so no answer slips past it) and says whether the bundle is open for
        answers — False ends the wait with the winner's replay, or CANCELLED when nobody won.
        Then ``wait.alongside`` runs until the wait ends. With ``wait.replays_end_the_wait``, a
        replay that ``alongside`` reports ends the wait unless a delivery to it is already
        under way (:meth:`Waiters.cancel` then returns False and the delivery arrives).
        Returns the answers to ``wait.questions``.
        """
        resolution, ended = await self._wait_registered(wait, on_progress, progress_interval)
        outcome = await self._wait_outcome(wait, resolution, ended)
        return AskResult.from_resolution(wait.questions, outcome)

    async def _wait_registered(
        self,
        wait: _LiveWait,
        on_progress: ProgressCallback | None,
        progress_interval: float,
    ) -> tuple[Resolution | None, WaitEnded | None]:
        """Register the wait and block in it while :meth:`_prepare_then_offer` (and the
        progress pings) run beside it; returns the delivered resolution, or how the wait
        ended. A cancelled wait detaches the session's bundles (facts §4.9) and re-raises."""
        pending_id = wait.pending_id
        self._waiters.register(pending_id, wait.session.id)
        if self._closing:
            self._waiters.cancel(pending_id)
        self._asking.add(pending_id)
        resolution: Resolution | None = None
        ended: WaitEnded | None = None
        try:
            async with anyio.create_task_group() as tasks:
                # Started after this task is already waiting (see the Waiters contract).
                tasks.start_soon(self._prepare_then_offer, wait)
                if on_progress is not None:
                    tasks.start_soon(_ping, on_progress, progress_interval, pending_id)
                try:
                    resolution = await self._waiters.wait(pending_id, self.ask_timeout)
                except WaitEnded as exc:
                    ended = exc
                finally:
                    tasks.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._after_abandoned_wait(wait.session)
            raise
        finally:
            self._asking.discard(pending_id)
        return resolution, ended

    async def _prepare_then_offer(self, wait: _LiveWait) -> None:
        """Beside the wait: run ``before()``, settle the wait with the winner's replay when the
        bundle is not open, else run ``alongside`` (see :meth:`_wait_live`)."""
        pending_id = wait.pending_id
        try:
            is_open = await wait.before()
            if not is_open:
                bundle = await self._run(self._claims.load_bundle, pending_id)
                self._settle(wait, replay_winner(pending_id, bundle.rows if bundle else ()))
                return
        except ClarionError as exc:
            wait.failures.append(exc)
            self._waiters.cancel(pending_id)
            return
        if wait.alongside is None:
            return
        try:
            offered = await wait.alongside(pending_id, wait.questions)
        except Exception:  # another surface failing must never end this wait
            log.warning("clarification.alongside_failed", pending_id=pending_id, exc_info=True)
            return
        if wait.replays_end_the_wait and offered is not None and not offered.claimed:
            self._settle(wait, offered)

    def _settle(self, wait: _LiveWait, resolution: Resolution | None) -> None:
        """End the wait with ``resolution`` in place of a delivery, unless a delivery to it is
        already under way (then :meth:`Waiters.cancel` returns False)."""
        if self._waiters.cancel(wait.pending_id):
            wait.settled.append(resolution)

    async def _wait_outcome(
        self, wait: _LiveWait, resolution: Resolution | None, ended: WaitEnded | None
    ) -> Resolution:
        """What the ended wait returns: the delivered answer, else the settled replay (the
        session back to RUNNING); raises the failure of ``before()`` or ``ended``.

        Raises:
            ClarionError: ``before()`` failed.
            WaitEnded: no answer was delivered and no replay settled the wait.
        """
        if wait.failures:
            raise wait.failures[0]
        # An answer delivered to this wait was finalized together with the session's return
        # to RUNNING (ClaimRepository.finalize_live_delivery); a replay was not.
        delivered = resolution is not None
        if resolution is None and wait.settled:
            resolution = wait.settled[0]
            if resolution is None:
                assert ended is not None
                raise ended  # not active and nobody won: the bundle is over
        if resolution is None:
            assert ended is not None
            # A cancel from turn completion has detached already; one from shutdown has not.
            if ended.reason is not WaitEnd.CANCELLED or self._closing:
                with anyio.CancelScope(shield=True):
                    await self._after_abandoned_wait(wait.session)
            log.info(
                "clarification.wait_ended", pending_id=wait.pending_id, reason=ended.reason.value
            )
            raise ended
        if not delivered:
            await self._set_state(
                wait.session.id,
                SessionState.RUNNING,
                expected=(SessionState.WAITING_FOR_INPUT,),
            )
        return resolution

    async def _set_state(self, session_id: str, state: str, *, expected: Sequence[str]) -> None:
        """Compare-and-set the session state and publish the change (facts §2.3). Best effort:
        the state is a hint for hosts, and an answer must never be lost over it."""
        try:
            session = await self._run(
                self._host.set_session_state, session_id, state, expected=expected
            )
        except Exception as exc:  # noqa: BLE001 - a hint for hosts: never lose an answer over it
            log.warning("session.state_update_failed", session_id=session_id, **failure_fields(exc))
            return
        if session is not None:
            publish(self._events, session_event(session))

    async def _after_abandoned_wait(self, session: Session) -> None:
        """Facts §4.9: the agent's call ended without an answer, so its bundles detach and stay
        answerable — unless another of its asks on this session is still waiting live."""
        try:
            active = await self._run(self._claims.active_pending_ids, session.id)
            if any(self._waiters.has_entry(pending_id) for pending_id in active):
                return
            rows = await self._run(self._claims.detach_active_bundles, session.id)
        except Exception as exc:  # noqa: BLE001 - best effort: the durable rows stay answerable regardless
            log.warning("clarification.detach_failed", session_id=session.id, **failure_fields(exc))
            return
        publish_bundles(self._events, BUNDLE_DETACHED, rows, session.task_id)


def _asker(identity: Identity, via: str) -> Asker:
    """Who asks, as stored with a new bundle (an internal caller's user id is "")."""
    return Asker(user_id=identity.user_id or "", via=via)


async def _ping(on_progress: ProgressCallback, interval: float, pending_id: str) -> None:
    """Progress notifications keep the asking client's connection alive (interfaces.md MCP)."""
    count = 0
    while True:
        await anyio.sleep(interval)
        count += 1
        try:
            await on_progress(count)
        except Exception:  # noqa: BLE001 - a failed ping must not end the wait; the transport
            # cancels the ask itself when its client is really gone
            log.warning("clarification.progress_failed", pending_id=pending_id)
            return
