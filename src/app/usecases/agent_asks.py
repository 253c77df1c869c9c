"""Waits that survive (issue #28): an agent's ask found again by its retry, its MCP task or
its next call, in any process, after anything happened to the call that made it.

Every MCP ask is recorded (:class:`~clarion.domain.asks.AskRecord`, through the
:class:`~clarion.ports.asks.AskRecords` port) before its bundle is created. Then:

- **Exact retries.** A call that is the same ask — same owner and scope, and the same
  idempotency key, or the same arguments while the earlier ask's outcome has not been
  returned — attaches to the recorded bundle:
  it waits on it again while it is open, or gets its stored outcome at once. It never creates
  a second question. A reservation is atomic per key, so concurrent retries find one record.
- **Tasks.** :meth:`AgentAsks.start_task` makes the bundle and returns its record at once; the
  record's id is the MCP task id, :meth:`AgentAsks.status` is what ``tasks/get`` reports, and
  :meth:`AgentAsks.cancel` is ``tasks/cancel``: the agent no longer wants the answer, so the
  bundle is cancelled like an operator cancel (A9) — it leaves every pending list, and a later
  answer is told it was cancelled.
- **Late answers.** A call that ended before its answer leaves its record open. The outcome is
  handed over the next time the agent comes back: by retrying the ask (what the wait-ended
  text tells it to do), by ``tasks/get``, or, when its next call is a different ask, in that
  call's result (``Answered.earlier``) — exactly once: handing it over moves the
  record from open to returned with a compare-and-set.

What counts as handed over is an outcome a call *returned*: a call that died after its answer
was committed but before it returned (a crash right after a live delivery) leaves the record
open, so its retry gets the answer.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

import attrs
import structlog

from clarion.app.usecases.access import authorize_bundle
from clarion.app.usecases.ask import Alongside, Asking, AskResult, ProgressCallback
from clarion.app.usecases.publishing import BUNDLE_CANCELLED, publish_bundles
from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.asks import AskRecord, AskState, owner_key, still_waiting
from clarion.domain.errors import NOT_FOUND_MESSAGE, NotFound
from clarion.domain.model import Identity, Question, Resolution
from clarion.domain.questions import QuestionDraft
from clarion.domain.replay import replay_winner
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import order_rows
from clarion.ports.asks import AskRecords
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository, Reread
from clarion.ports.events import EventPublisher
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.waiters import WaitEnd, WaitEnded, Waiters

log = structlog.get_logger(__name__)

AGENT_SCOPE: Final = "agent"
RECORD_FAILED = "failed to record the ask"
EARLIER_LIMIT: Final = 20  # earlier outcomes handed over by one call at most


def session_scope(session_id: str) -> str:
    """The scope of the asks made on one in-session endpoint."""
    return f"session:{session_id}"


class Progress(enum.Enum):
    """Where a recorded ask's bundle stands."""

    WAITING = "waiting"  # open for answers (or an answer is being delivered)
    RESOLVED = "resolved"  # answered or rejected, and delivered
    ENDED = "ended"  # closed without an answer: expired, cancelled, superseded, gone


@attrs.frozen
class AskStatus:
    """A recorded ask as its agent may see it (what ``tasks/get`` reports)."""

    record: AskRecord
    progress: Progress
    questions: tuple[Question, ...] = ()
    context: str = ""
    result: AskResult | None = None  # RESOLVED
    ended: WaitEnded | None = None  # ENDED: what the blocking call raises in that case

    @property
    def cancelled(self) -> bool:
        return self.record.state is AskState.CANCELLED


@attrs.frozen
class BundleView:
    """A bundle as the asking agent's app card shows it (issue #31): what was asked, where it
    stands and, once settled, the winner's resolution and who gave it, where."""

    pending_id: str
    progress: Progress
    questions: tuple[Question, ...]
    context: str
    resolution: Resolution | None = None  # RESOLVED: the winner's (claimed=False, a replay)
    resolved_by: ResolvedBy | None = None  # RESOLVED


@attrs.frozen
class Answered:
    """What a recorded ask's call returns: its own outcome, and the settled outcomes of the
    asker's earlier asks whose calls ended before them (each handed over once)."""

    result: AskResult
    earlier: tuple[AskStatus, ...] = ()


@attrs.frozen
class Asker:
    """Who asks and where: the owner and scope of the records a call reads and writes."""

    identity: Identity
    owner: str
    scope: str

    @classmethod
    def of(cls, identity: Identity, credential: str, scope: str) -> Asker:
        return cls(identity, owner_key(identity.user_id or "", credential), scope)


class _Retried(Exception):
    """Raised from a reservation that found the ask already recorded."""

    def __init__(self, record: AskRecord) -> None:
        super().__init__(record.id)
        self.record = record


@attrs.define
class AgentAsks:
    """See the module docstring."""

    _records: AskRecords = attrs.field(alias="records")
    _asking: Asking = attrs.field(alias="asking")
    _claims: ClaimRepository = attrs.field(alias="claims")
    _authorizer: TaskAuthorizer = attrs.field(alias="authorizer")
    _waiters: Waiters = attrs.field(alias="waiters")
    _events: EventPublisher = attrs.field(alias="events")
    _clock: Clock = attrs.field(alias="clock")
    _ids: IdGenerator = attrs.field(alias="ids")
    _run: Runner = attrs.field(alias="runner")

    # -- identifying an ask ----------------------------------------------------------------

    async def find(self, asker: Asker, key: str) -> AskRecord | None:
        """The recorded ask a call with this key is a retry of, if any. Without an
        idempotency key, an earlier ask that closed without an answer (expired, cancelled,
        superseded by a newer turn) is not one: the same question is then asked anew."""
        record = await self._run.guarded(
            RECORD_FAILED, self._records.find, asker.owner, asker.scope, key
        )
        if record is None or record.keyed:
            return record
        status = await self._status_of(record)
        if status.progress is Progress.ENDED:
            await self._move(record, AskState.RETURNED)
            return None
        return record

    # -- asking ----------------------------------------------------------------------------

    def _reservation(
        self, asker: Asker, key: str, into: list[AskRecord], *, as_task: bool
    ) -> Callable[[str, str], Awaitable[None]]:
        """The hook :class:`Asking` calls once it knows the bundle (its pending id may be an
        identical live bundle's, §2.7): record the ask, or raise :class:`_Retried` when the
        same ask was recorded first."""

        async def reserve(pending_id: str, session_id: str) -> None:
            record = AskRecord(
                id=self._ids.new_id(),
                owner=asker.owner,
                scope=asker.scope,
                retry_key=key,
                pending_id=pending_id,
                session_id=session_id,
                created_at=self._clock.now(),
                as_task=as_task,
            )
            held = await self._run.guarded(RECORD_FAILED, self._records.reserve, record)
            if held.id != record.id:
                raise _Retried(held)
            into.append(record)

        return reserve

    async def ask(
        self,
        asker: Asker,
        key: str,
        session_id: str,
        drafts: Sequence[QuestionDraft],
        context: str,
        *,
        context_paragraphs: Sequence[str] = (),
        on_progress: ProgressCallback | None = None,
        progress_interval: float,
        alongside: Alongside | None = None,
    ) -> Answered:
        """:meth:`Asking.ask`, recorded under ``key`` — or, when a concurrent call recorded the
        same ask first, :meth:`attach` to it. Raises what :meth:`Asking.ask` raises."""
        reserved: list[AskRecord] = []
        try:
            result = await self._asking.ask(
                asker.identity,
                session_id,
                drafts,
                context,
                context_paragraphs=context_paragraphs,
                on_progress=on_progress,
                progress_interval=progress_interval,
                alongside=alongside,
                on_bundle=self._reservation(asker, key, reserved, as_task=False),
            )
        except _Retried as retried:
            return await self.attach(
                asker, retried.record, on_progress=on_progress, progress_interval=progress_interval
            )
        return await self._hand_over(reserved[0].id, result)

    async def attach(
        self,
        asker: Asker,
        record: AskRecord,
        *,
        on_progress: ProgressCallback | None = None,
        progress_interval: float,
        alongside: Alongside | None = None,
    ) -> Answered:
        """A retry of ``record``: its stored outcome at once, or its wait joined again.

        Raises:
            WaitEnded: the bundle closed without an answer (CANCELLED), or the renewed wait
                ended (as :meth:`Asking.rejoin`); the record stays open in the second case.
            NotFound, ClaimError: as :meth:`Asking.rejoin`.
        """
        status = await self._status_of(record)
        log.info(
            "clarification.ask_retried",
            pending_id=record.pending_id,
            progress=status.progress.value,
        )
        if status.progress is Progress.WAITING:
            return await self.rejoin(
                asker,
                record,
                on_progress=on_progress,
                progress_interval=progress_interval,
                alongside=alongside,
            )
        if status.result is not None:
            return await self._hand_over(record.id, status.result)
        await self._move(record, AskState.RETURNED)
        assert status.ended is not None
        raise status.ended

    async def rejoin(
        self,
        asker: Asker,
        record: AskRecord,
        *,
        on_progress: ProgressCallback | None = None,
        progress_interval: float,
        alongside: Alongside | None = None,
    ) -> Answered:
        """The later call of a recorded round (:meth:`offer`), carrying the person's response:
        wait on the bundle again at once (:meth:`Asking.rejoin`, which returns a settled
        bundle's winner itself) and hand the outcome over. Unlike :meth:`attach` it reads no
        status first, so a response that arrives while another answer is being claimed still
        waits for that claim's outcome.

        Raises:
            WaitEnded, NotFound, ClaimError: as :meth:`Asking.rejoin` (the record stays open).
        """
        result = await self._asking.rejoin(
            asker.identity,
            record.session_id,
            record.pending_id,
            on_progress=on_progress,
            progress_interval=progress_interval,
            alongside=alongside,
        )
        return await self._hand_over(record.id, result)

    async def start_task(
        self,
        asker: Asker,
        key: str,
        session_id: str,
        drafts: Sequence[QuestionDraft],
        context: str,
        *,
        context_paragraphs: Sequence[str] = (),
    ) -> AskRecord:
        """Create the bundle without waiting on it (:meth:`Asking.offer`) and return its record,
        whose id is the task id; a retry returns the ask already recorded.

        Raises:
            what :meth:`Asking.offer` raises.
        """
        return await self.offer(
            asker,
            key,
            session_id,
            drafts,
            context,
            context_paragraphs=context_paragraphs,
            as_task=True,
        )

    async def offer(
        self,
        asker: Asker,
        key: str,
        session_id: str,
        drafts: Sequence[QuestionDraft],
        context: str,
        *,
        context_paragraphs: Sequence[str] = (),
        as_task: bool = False,
    ) -> AskRecord:
        """The recorded first round of an ask answered in a later call (an MCP task, or the
        2026-07-28 ``input_required`` round of a question offered in the asking client, issue
        #31): create the bundle detached (:meth:`Asking.offer`) and return its record; a
        retry returns the ask already recorded (its later call attaches with :meth:`attach`).

        Raises:
            what :meth:`Asking.offer` raises.
        """
        reserved: list[AskRecord] = []
        try:
            await self._asking.offer(
                asker.identity,
                session_id,
                drafts,
                context,
                context_paragraphs=context_paragraphs,
                on_bundle=self._reservation(asker, key, reserved, as_task=as_task),
            )
        except _Retried as retried:
            return retried.record
        return reserved[0]

    # -- reading and ending a recorded ask (MCP tasks) ---------------------------------------

    async def status(self, asker: Asker, ask_id: str, *, questions: bool = True) -> AskStatus:
        """The recorded ask ``ask_id`` as its owner sees it; a settled outcome counts as handed
        over (it is not offered again as an earlier answer).

        With ``questions=False`` (a caller that shows nothing of an ask still waiting but that
        it waits: a ``tasks/get`` poll without a form), an ask the store's probe finds surely
        waiting comes back WAITING without its questions and context, from that one read
        instead of a snapshot of its bundle (issue #35).

        Raises:
            NotFound: no such record, or another owner's (the same error for each).
            ClaimError: the store failed.
        """
        record, reread = await self._run.guarded(
            RECORD_FAILED, self._owned_with_bundle, asker, ask_id, questions
        )
        if reread is None:
            return AskStatus(record, Progress.WAITING)
        status = _status(record, reread)
        if status.progress is not Progress.WAITING and record.state is AskState.OPEN:
            await self._move(record, AskState.RETURNED)
        return status

    async def cancel(self, asker: Asker, ask_id: str) -> None:
        """``tasks/cancel``: the agent no longer wants the answer. The record is cancelled and
        so is its bundle if it is still open (A9's operator cancel: it leaves the pending
        lists, and a later answer is told it was cancelled). Idempotent.

        Raises:
            NotFound: no such record, or another owner's.
            ClaimError: the store failed.
        """
        record = await self._owned(asker, ask_id)
        await self._move(record, AskState.CANCELLED, also_from=(AskState.RETURNED,))
        try:
            bundle = await authorize_bundle(
                self._run, self._claims, self._authorizer, asker.identity, record.pending_id
            )
        except NotFound:
            return
        self._waiters.cancel(record.pending_id)
        rows = await self._run.guarded(
            StoreFailure("failed to cancel clarification request", pending_id=record.pending_id),
            self._claims.cancel_active_bundle,
            bundle.session_id,
            record.pending_id,
        )
        if rows:
            log.info("clarification.cancelled", pending_id=record.pending_id, by="agent")
            publish_bundles(self._events, BUNDLE_CANCELLED, rows, bundle.task_id)

    async def _take_earlier(
        self, earlier: Sequence[AskRecord], *, besides: str
    ) -> tuple[AskStatus, ...]:
        """The settled outcomes among ``earlier`` (the asker's open asks whose calls ended
        first, oldest first, as :meth:`AskRecords.returned` listed them), handed over now:
        each exactly once. The store's list may hold asks still waiting; each bundle's own
        re-read decides. ``besides`` is the pending id of the ask the calling call is about
        (left out)."""
        taken: list[AskStatus] = []
        for record in earlier:
            if record.pending_id == besides:
                continue
            status = await self._status_of(record)
            if status.progress is Progress.WAITING:
                continue
            if await self._move(record, AskState.RETURNED):
                taken.append(status)
        return tuple(taken)

    # -- the app card's view (issue #31) ---------------------------------------------------

    async def view(self, asker: Asker, *, key: str = "", pending_id: str = "") -> BundleView:
        """The bundle ``pending_id``, or else the one of the asker's open ask recorded under
        ``key`` (a card knows the ask's arguments, not its id). Read only: nothing is handed
        over or moved. Either way ``asker``'s identity must be allowed to see the bundle.

        Raises:
            NotFound: no open ask under ``key``, or a bundle that is unknown or not visible to
                the identity (one error for each, A3).
            ClaimError: the store failed.
        """
        if not pending_id:
            record = await self._run.guarded(
                RECORD_FAILED, self._records.find, asker.owner, asker.scope, key
            )
            if record is None:
                raise NotFound(NOT_FOUND_MESSAGE)
            pending_id = record.pending_id
        await authorize_bundle(
            self._run, self._claims, self._authorizer, asker.identity, pending_id
        )
        reread = await self._run.guarded(RECORD_FAILED, self._claims.reread_bundle, pending_id)
        bundle = reread.bundle
        if bundle is None:
            raise NotFound(NOT_FOUND_MESSAGE)
        questions, context = bundle.questions, bundle.context
        progress, winner = _progress(reread)
        if winner is not None:
            first = next(row for row in order_rows(bundle.rows) if row.is_resolved)
            return BundleView(
                pending_id,
                Progress.RESOLVED,
                questions,
                context,
                resolution=winner,
                resolved_by=first.resolved_by,
            )
        return BundleView(pending_id, progress, questions, context)

    # -- helpers ---------------------------------------------------------------------------

    async def _owned(self, asker: Asker, ask_id: str) -> AskRecord:
        return await self._run.guarded(RECORD_FAILED, self._owned_record, asker, ask_id)

    def _owned_record(self, asker: Asker, ask_id: str) -> AskRecord:
        record = self._records.get(ask_id)
        if record is None or record.owner != asker.owner:
            raise NotFound("task not found")
        return record

    def _owned_with_bundle(
        self, asker: Asker, ask_id: str, questions: bool
    ) -> tuple[AskRecord, Reread | None]:
        """The owned record and one snapshot of its bundle, read on ONE worker thread (a
        ``tasks/get`` poll: one hop instead of two). Without ``questions``, the record's probe
        first: no snapshot (None) when it says the ask surely waits."""
        if questions:
            record = self._owned_record(asker, ask_id)
            return record, self._claims.reread_bundle(record.pending_id)
        probe = self._records.probe(ask_id)
        if probe is None or probe.record.owner != asker.owner:
            raise NotFound("task not found")
        if probe.waits:
            return probe.record, None
        return probe.record, self._claims.reread_bundle(probe.record.pending_id)

    async def _status_of(self, record: AskRecord) -> AskStatus:
        """The ask's progress from ONE read of its bundle and session (a snapshot): a claim
        and a resume landing between two separate reads must not make a bundle that is
        being answered look closed."""
        reread = await self._run.guarded(
            StoreFailure(RECORD_FAILED, pending_id=record.pending_id),
            self._claims.reread_bundle,
            record.pending_id,
        )
        return _status(record, reread)

    async def _hand_over(self, ask_id: str, result: AskResult) -> Answered:
        """The call is about to return ``result``: its record is returned, in one transaction
        that also lists the asker's other open asks that may be settled, and only when there
        are some the settled outcomes among them go with it (:meth:`_take_earlier`)."""
        earlier = await self._run.guarded(
            RECORD_FAILED, self._records.returned, ask_id, EARLIER_LIMIT
        )
        if not earlier:
            return Answered(result)
        return Answered(result, await self._take_earlier(earlier, besides=result.pending_id))

    async def _move(
        self, record: AskRecord, to: AskState, *, also_from: tuple[AskState, ...] = ()
    ) -> bool:
        return await self._run.guarded(
            RECORD_FAILED, self._records.move, record.id, (AskState.OPEN, *also_from), to
        )


def _progress(reread: Reread) -> tuple[Progress, Resolution | None]:
    """Where a bundle stands, from one snapshot of it and its session: being delivered or
    still open (WAITING, :func:`~clarion.domain.asks.still_waiting`), settled (RESOLVED, with
    the winner), else closed without an answer or unreadable (ENDED)."""
    bundle = reread.bundle
    if bundle is None:
        return Progress.ENDED, None
    if still_waiting(bundle.rows, reread.facts):
        return Progress.WAITING, None
    winner = replay_winner(bundle.pending_id, bundle.rows)
    if winner is not None:
        return Progress.RESOLVED, winner
    return Progress.ENDED, None


def _status(record: AskRecord, reread: Reread) -> AskStatus:
    """``record``'s ask as its agent may see it, from one snapshot of its bundle."""
    bundle = reread.bundle
    if bundle is None:
        return AskStatus(record, Progress.ENDED, ended=_ended(record))
    questions, context = bundle.questions, bundle.context
    progress, winner = _progress(reread)
    if winner is not None:
        return AskStatus(
            record, Progress.RESOLVED, questions, context, result=_result(questions, winner)
        )
    ended = _ended(record) if progress is Progress.ENDED else None
    return AskStatus(record, progress, questions, context, ended=ended)


def _result(questions: tuple[Question, ...], resolution: Resolution) -> AskResult:
    return AskResult.from_resolution(questions, resolution)


def _ended(record: AskRecord) -> WaitEnded:
    return WaitEnded(WaitEnd.CANCELLED, record.pending_id)
