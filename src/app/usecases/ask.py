"""Asking and waiting: creating a bundle, the blocking ask, the live request, wait and cancel
(upstream facts §2.3–§2.8, §3, §4.9; spec A5a, A7, A9).

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

from clarion.app.usecases.access import load_authorized_session
from clarion.app.usecases.publishing import (
    BUNDLE_CANCELLED,
    BUNDLE_CREATED,
    BUNDLE_DETACHED,
    publish,
    publish_bundles,
    session_event,
)
from clarion.app.usecases.resolve import Resolver
from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.errors import (
    NOT_ACTIVE_MESSAGE,
    ClarionError,
    InvalidArgument,
    NotActive,
    NotFound,
)
from clarion.domain.host import Session
from clarion.domain.model import (
    Answer,
    Identity,
    Question,
    Resolution,
    SessionState,
    is_terminal_state,
)
from clarion.domain.questions import QuestionDraft, validate_questions
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.events import EventPublisher
from clarion.ports.host import HostRepository
from clarion.ports.system import IdGenerator
from clarion.ports.waiters import WaitEnd, WaitEnded, Waiters

log = structlog.get_logger(__name__)

ASK_TIMEOUT_S = 7200.0  # CLARION_ASK_TIMEOUT_S default (facts §2.8)
PROGRESS_INTERVAL_S = 15.0
CREATE_FAILED = "failed to create clarification messages"
CANCEL_FAILED = "failed to cancel clarification request"

ProgressCallback = Callable[[int], Awaitable[None]]


@attrs.frozen
class LiveRequest:
    """``GET /:id``: a bundle an agent is still waiting on (upstream facts §2.1 Request)."""

    pending_id: str
    session_id: str
    task_id: str
    questions: tuple[Question, ...]
    context: str
    created_at: datetime


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


class Asking:
    """Creating bundles and waiting on them."""

    def __init__(
        self,
        *,
        claims: ClaimRepository,
        host: HostRepository,
        authorizer: TaskAuthorizer,
        waiters: Waiters,
        events: EventPublisher,
        ids: IdGenerator,
        runner: Runner,
        resolver: Resolver,
        ask_timeout: float = ASK_TIMEOUT_S,
    ) -> None:
        self._claims = claims
        self._host = host
        self._authorizer = authorizer
        self._waiters = waiters
        self._events = events
        self._ids = ids
        self._run = runner
        self._resolver = resolver
        self.ask_timeout = ask_timeout
        self._asking: set[str] = set()  # pending ids of asks blocked in this process
        self._closing = False

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
        return _Prepared(session=session, pending_id=self._ids.new_id(), is_new=True)

    async def _make_durable(
        self, prepared: _Prepared, questions: Sequence[Question], context: str
    ) -> None:
        if not prepared.is_new:
            return
        bundle = await self._run.guarded(
            StoreFailure(CREATE_FAILED, pending_id=prepared.pending_id),
            self._claims.create_bundle,
            pending_id=prepared.pending_id,
            session_id=prepared.session.id,
            task_id=prepared.session.task_id,
            questions=questions,
            context=context,
        )
        log.info("clarification.created", pending_id=prepared.pending_id)
        publish_bundles(self._events, BUNDLE_CREATED, bundle.rows, prepared.session.task_id)

    async def create(
        self,
        identity: Identity,
        session_id: str,
        drafts: Sequence[QuestionDraft],
        context: str,
        task_id: str | None = None,
    ) -> str:
        """``POST /request``: create (or reuse, §2.7) a bundle and return its ``pending_id``.
        Does not block and does not change the session's state (facts §2.4).

        Raises:
            InvalidQuestions: the question set is malformed.
            InvalidArgument: ``task_id`` is not the session's task.
            NotFound: the session does not exist or ``identity`` may not see it.
            NotActive: the session is COMPLETED, FAILED or CANCELLED.
            ClaimError: the store failed.
        """
        questions = validate_questions(drafts)
        prepared = await self._run.guarded(
            CREATE_FAILED, self._prepare, identity, session_id, questions, task_id
        )
        self._waiters.register(prepared.pending_id, prepared.session.id)
        try:
            await self._make_durable(prepared, questions, context)
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
        on_progress: ProgressCallback | None = None,
        progress_interval: float = PROGRESS_INTERVAL_S,
    ) -> AskResult:
        """``ask_user_question``: create the bundle, mark the session WAITING_FOR_INPUT, wait
        until answered or rejected, mark it RUNNING again, return the answers. While waiting,
        ``on_progress(n)`` is called every ``progress_interval`` seconds.

        Raises:
            InvalidQuestions, InvalidArgument, NotFound, NotActive, ClaimError: as :meth:`create`.
            WaitEnded: the wait ended without an answer (timeout, cancelled, turn completed,
                delivery failed); the bundle stays answerable through the resume path.
        """
        questions = validate_questions(drafts)
        prepared = await self._run.guarded(
            CREATE_FAILED, self._prepare, identity, session_id, questions, None
        )
        pending_id = prepared.pending_id
        self._waiters.register(pending_id, prepared.session.id)
        if self._closing:
            self._waiters.cancel(pending_id)
        self._asking.add(pending_id)
        failures: list[BaseException] = []

        async def make_visible() -> None:
            try:
                await self._make_durable(prepared, questions, context)
                await self._set_state(
                    prepared.session.id,
                    SessionState.WAITING_FOR_INPUT,
                    expected=(SessionState.STARTING, SessionState.RUNNING),
                )
            except ClarionError as exc:
                failures.append(exc)
                self._waiters.cancel(pending_id)

        resolution: Resolution | None = None
        ended: WaitEnded | None = None
        try:
            async with anyio.create_task_group() as tasks:
                # Started after this task is already waiting (see the Waiters contract).
                tasks.start_soon(make_visible)
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
                await self._after_abandoned_wait(prepared.session)
            raise
        finally:
            self._asking.discard(pending_id)
        if failures:
            raise failures[0]
        if resolution is None:
            assert ended is not None
            # A cancel from turn completion has detached already; one from shutdown has not.
            if ended.reason is not WaitEnd.CANCELLED or self._closing:
                with anyio.CancelScope(shield=True):
                    await self._after_abandoned_wait(prepared.session)
            log.info("clarification.wait_ended", pending_id=pending_id, reason=ended.reason.value)
            raise ended
        await self._set_state(
            prepared.session.id,
            SessionState.RUNNING,
            expected=(SessionState.WAITING_FOR_INPUT,),
        )
        return AskResult.from_resolution(questions, resolution)

    async def _set_state(self, session_id: str, state: str, *, expected: Sequence[str]) -> None:
        """Compare-and-set the session state and publish the change (facts §2.3). Best effort:
        the state is a hint for hosts, and an answer must never be lost over it."""
        try:
            session = await self._run(
                self._host.set_session_state, session_id, state, expected=expected
            )
        except Exception:  # a hint for hosts: never lose an answer over it
            log.warning("session.state_update_failed", session_id=session_id, exc_info=True)
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
        except Exception:  # best effort: the durable rows stay answerable regardless
            log.warning("clarification.detach_failed", session_id=session.id, exc_info=True)
            return
        publish_bundles(self._events, BUNDLE_DETACHED, rows, session.task_id)

    # -- the live request ------------------------------------------------------------------

    async def get_request(self, identity: Identity, pending_id: str) -> LiveRequest:
        """``GET /:id``: authorize first (A7), then the live entry.

        Raises:
            NotFound: not visible to ``identity``, or nobody waits on it any more.
            ClaimError: the store failed.
        """
        bundle = await self._resolver.authorize_bundle(identity, pending_id)
        if not self._waiters.has_entry(pending_id):
            raise NotFound("clarification request not found")
        return LiveRequest(
            pending_id=pending_id,
            session_id=bundle.session_id,
            task_id=bundle.task_id,
            questions=bundle.questions,
            context=bundle.context,
            created_at=bundle.created_at,
        )

    async def wait(
        self, identity: Identity, pending_id: str, timeout: float | None = None
    ) -> Resolution:
        """``GET /:id/wait``: authorize first (A5a), then wait on the live entry.

        Raises:
            NotFound: not visible to ``identity`` (same for foreign and fabricated ids, A5a).
            ClaimError: the store failed.
            WaitEnded: no live entry, cancelled, timed out or delivery failed (the REST 504).
        """
        await self._resolver.authorize_bundle(identity, pending_id)
        return await self._waiters.wait(
            pending_id, self.ask_timeout if timeout is None else timeout
        )

    async def cancel(self, identity: Identity, pending_id: str) -> None:
        """``POST /:id/cancel`` (A9): authorize, then cancel the live entry and mark the
        bundle's pending rows ``cancelled``. Never goes through the claim.

        Raises:
            NotFound: not visible to ``identity``, or no live entry.
            NotActive: the live entry was already resolved or cancelled.
            ClaimError: the store failed.
        """
        bundle = await self._resolver.authorize_bundle(identity, pending_id)
        if not self._waiters.has_entry(pending_id):
            raise NotFound("clarification request not found")
        if not self._waiters.cancel(pending_id):
            raise NotActive(NOT_ACTIVE_MESSAGE)
        rows = await self._run.guarded(
            StoreFailure(CANCEL_FAILED, pending_id=pending_id),
            self._claims.cancel_active_bundle,
            bundle.session_id,
            pending_id,
        )
        log.info("clarification.cancelled", pending_id=pending_id)
        publish_bundles(self._events, BUNDLE_CANCELLED, rows, bundle.task_id)


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
