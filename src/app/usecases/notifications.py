"""The notification worker (issue #17): turns outbox entries into deliveries, reminders,
escalations and deadline actions.

Every entry is handed out under a lease (:meth:`NotificationOutbox.claim_due`), so several
processes on one database never act on one entry concurrently, and one that dies gives its
entries back when the lease passes: delivery is at-least-once, each attempt carrying the
entry's stable idempotency key. Each kind of entry:

- an *event* (``route_id`` "") fans out: one delivery per route of the bundle's workspace
  ("" = the default routes) that hears it, and — for ``answerable`` — each route's reminder,
  escalation and deadline as entries due later; all recorded with the event's completion, and
  keyed so a repeat after a crash records nothing twice. The entries due at once are taken in
  that same transaction under this worker's lease (:meth:`NotificationOutbox.finish_and_take`)
  and handled in the same round (issue #32); every entry records the key of the event it
  follows from (``origin_key``);
- a *delivery* (also reminders and escalations) is dropped when it asks a person to act and
  the bundle is no longer answerable, when a ``resolved`` event's claim was rolled back, when
  its route was removed, or when the route's identity may not see the bundle's task (checked
  now, at send time); otherwise it is sent with the route's channel, retried with
  exponential backoff, and given up after ``max_attempts``;
- the entries handed out together (one claim, or the deliveries a fan-out takes) share their
  reads (:class:`_SharedReads`): each bundle, task and workspace's routes is read once for all
  of them while the read is fresh (``SHARED_READ_S``), so an e-mail costs one bundle load and
  one task read;
- a *deadline* applies its route's ``on_deadline``: ``keep`` decides nothing, ``expire`` ends
  the bundle with the ordinary expire transition, ``default:<option id>`` answers it through
  the one resolver with the system identity. Either races a human answer through the same
  conditional writes: exactly one wins.

One slow, failing or huge destination delays nobody else (issue #29 S2):

- entries are handled **concurrently**, each in its own task: deliveries share
  ``concurrency`` slots, while fan-outs and deadlines take none, so reminders, escalations and
  deadlines come due on their own clock whatever the deliveries are doing; ``run_forever``
  keeps claiming due entries while earlier ones are still being delivered (never more than
  ``max_in_flight`` at once);
- the deliveries of one route go **one at a time**, in the order they were claimed, so a slow
  route holds at most one slot;
- every delivery has one **deadline** for the whole attempt (``delivery_timeout_s``): past it,
  the attempt counts as a transient failure and is retried with backoff;
- a route whose delivery failed transiently **backs off** as a whole (the same exponential
  backoff, per route, in this process): its other due deliveries are not attempted until then
  but rescheduled to that time, each such postponement counting as an attempt;
- a delivery that waited so long for its route that its lease could pass before its attempt
  ends is left alone: its lease runs out and it is handed out again (nothing was sent, so
  at-least-once is kept and nothing is sent twice concurrently).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Generic, Protocol, TypeVar

import anyio
import attrs
import structlog

from clarion.app.usecases.access import Assignment, GroupsOf, check_assignment
from clarion.app.usecases.runner import Runner
from clarion.domain.errors import ClarionError, NotFound, failure_fields
from clarion.domain.listing import task_visible
from clarion.domain.model import CANCELLED, EXPIRED, Answer, Identity, Outcome, Resolution
from clarion.domain.notifications import (
    ANSWERABLE,
    ASKING_EVENTS,
    CANCELLED_EVENT,
    DEADLINE,
    DEFAULT_PREFIX,
    DONE,
    DROPPED,
    ESCALATION,
    EXPIRED_EVENT,
    FAILED,
    ON_DEADLINE_EXPIRE,
    REMINDER,
    RESOLVED,
    SUPERSEDED_EVENT,
    NewEntry,
    OutboxEntry,
    Route,
    backoff,
    deep_link,
    event_key,
)
from clarion.domain.replay import replay_winner
from clarion.domain.resolved_by import Surface
from clarion.domain.rows import Bundle
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.host import HostRepository
from clarion.ports.notifications import (
    DeliveryOutcome,
    InPlaceNotifier,
    Notification,
    NotificationStore,
    Notifier,
    Sent,
)
from clarion.ports.system import Clock
from clarion.ports.telemetry import Metrics, NoMetrics
from clarion.ports.tokens import UserDirectory

log = structlog.get_logger(__name__)

NOTIFY_FAILED = "failed to read or write the notification outbox"

ExpireBundle = Callable[[Bundle], Awaitable[object]]


@attrs.frozen
class _TaskFacts:
    """What a delivery reads of its bundle's task: the task's workspace, whether the task and
    the workspace exist and the workspace's owner (the L1c inputs). A task's workspace and a
    workspace's owner never change, so a fan-out's read serves the deliveries it hands on."""

    task_exists: bool
    workspace_id: str = ""
    workspace_exists: bool = False
    owner_id: str = ""


_T = TypeVar("_T")

# How long a shared read serves the entries handed out with it: one that waited longer (for its
# route or for a slot) reads anew, so what it sends is as fresh as a read of its own would be.
SHARED_READ_S = 1.0


@attrs.define
class _Once(Generic[_T]):
    """Reads of one kind, each made at most once while it is fresh (``SHARED_READ_S``):
    whoever asks for a key while it is being read waits for that read (a failed read is not
    kept: the next asker reads again)."""

    _clock: Clock
    _found: dict[str, tuple[datetime, _T]] = attrs.field(factory=dict)
    _locks: dict[str, anyio.Lock] = attrs.field(factory=dict)

    async def get(self, key: str, read: Callable[[str], Awaitable[_T]]) -> _T:
        async with self._locks.setdefault(key, anyio.Lock()):
            found, now = self._found.get(key), self._clock.now()
            if found is None or (now - found[0]).total_seconds() > SHARED_READ_S:
                found = self._found[key] = (now, await read(key))
            return found[1]


@attrs.frozen
class _SharedReads:
    """The reads shared by the entries handed out together — one claim, or the deliveries one
    fan-out takes (issue #32): each bundle, each task's facts and each workspace's routes are
    read once for all of them, so several entries about one bundle cost one load.

    What a delivery decides at send time is read anew for it: its route, the route's user and,
    for an event asking for an answer, whether the bundle is still answerable. A shared bundle
    read at most ``SHARED_READ_S`` ago is as good as a read of its own, a moment later: its
    questions and context never change, a ``resolved`` answer still being delivered is retried
    (and read again then), and once delivered it stands."""

    bundles: _Once[Bundle | None]
    facts: _Once[_TaskFacts]
    routes: _Once[tuple[Route, ...]]

    @classmethod
    def on(cls, clock: Clock) -> _SharedReads:
        return cls(_Once(clock), _Once(clock), _Once(clock))


# The task group of the round (``run_once``) or loop (``run_forever``) handling an entry: the
# entries its finish takes start there, outside any route's lane.
_ROUND: ContextVar[anyio.abc.TaskGroup | None] = ContextVar("notification_round", default=None)


class AnswerBundle(Protocol):
    """The one resolver's ``resolve`` (the deadline's default answer goes through it)."""

    def __call__(
        self, identity: Identity, pending_id: str, outcome: Outcome, *, surface: Surface
    ) -> Awaitable[object]: ...


@attrs.frozen
class DeliveryPolicy:
    """How the worker paces itself (``CLARION_NOTIFY_*``, docs/notifications.md)."""

    lease_s: float = 120.0  # longer than any one delivery may take
    batch: int = 20
    max_attempts: int = 8
    backoff_base_s: float = 5.0
    backoff_cap_s: float = 3600.0
    poll_interval_s: float = 2.0
    retention_s: float = 7 * 24 * 3600.0  # finished entries are purged after this
    # Issue #29 S2: one deadline per delivery attempt (well within the lease), deliveries at
    # once, and entries in flight at once in ``run_forever``.
    delivery_timeout_s: float = attrs.field(default=10.0)
    concurrency: int = 8
    max_in_flight: int = 64

    @delivery_timeout_s.validator
    def _within_lease(self, _: object, value: float) -> None:
        if not 0 < value <= self.lease_s / 2:
            raise ValueError(f"delivery_timeout_s must be in (0, {self.lease_s / 2:g}]")


@attrs.define(kw_only=True)
class NotificationWorker:
    """See the module docstring. ``expire`` and ``answer`` are the lifecycle's expire and the
    resolver's ``resolve`` (the one resolver every surface uses)."""

    _store: NotificationStore = attrs.field(alias="store")
    _claims: ClaimRepository = attrs.field(alias="claims")
    _host: HostRepository = attrs.field(alias="host")
    _authorizer: TaskAuthorizer = attrs.field(alias="authorizer")
    _users: UserDirectory | None = attrs.field(alias="users")
    _notifiers: Mapping[str, Notifier] = attrs.field(alias="notifiers")
    _expire: ExpireBundle = attrs.field(alias="expire")
    _answer: AnswerBundle = attrs.field(alias="answer")
    _clock: Clock = attrs.field(alias="clock")
    _run: Runner = attrs.field(alias="runner")
    _public_url: str = attrs.field(alias="public_url")
    _policy: DeliveryPolicy = attrs.field(factory=DeliveryPolicy, alias="policy")
    _metrics: Metrics = attrs.field(factory=NoMetrics, alias="metrics")
    # Issue #33: a user's groups — a route acting for a user notifies them of a bundle
    # assigned to candidates only when they are one (None: no groups are kept).
    _groups_of: GroupsOf | None = attrs.field(default=None, alias="groups_of")
    # Issue #29 S2: delivery slots, one lane per route, each route's backoff (until, failures)
    # and the entries this process is handling (see the module docstring).
    _slots: anyio.CapacityLimiter = attrs.field(init=False)
    _lanes: dict[str, anyio.Lock] = attrs.field(init=False, factory=dict)
    _route_backoff: dict[str, tuple[datetime, int]] = attrs.field(init=False, factory=dict)
    _in_flight: set[str] = attrs.field(init=False, factory=set)

    @_slots.default
    def _make_slots(self) -> anyio.CapacityLimiter:
        return anyio.CapacityLimiter(self._policy.concurrency)

    async def _claim(self, limit: int) -> tuple[OutboxEntry, ...]:
        return await self._run.guarded(
            NOTIFY_FAILED,
            self._store.claim_due,
            self._clock.now(),
            limit=limit,
            lease_s=self._policy.lease_s,
        )

    async def run_once(self) -> int:
        """Handle every entry due now (up to one batch), concurrently, and wait for them all;
        returns how many were handed out."""
        entries = await self._claim(self._policy.batch)
        reads = _SharedReads.on(self._clock)
        async with anyio.create_task_group() as tasks:
            round_token = _ROUND.set(tasks)
            try:
                for entry in entries:
                    tasks.start_soon(self._tracked, entry, self._clock.now(), reads)
            finally:
                _ROUND.reset(round_token)
        return len(entries)

    async def run_forever(self) -> None:
        """Claim due entries and handle each in its own task until cancelled, never waiting
        for a delivery before claiming more; a failing round is logged and retried."""
        async with anyio.create_task_group() as tasks:
            round_token = _ROUND.set(tasks)
            try:
                await self._rounds(tasks)
            finally:
                _ROUND.reset(round_token)

    async def _rounds(self, tasks: anyio.abc.TaskGroup) -> None:
        """``run_forever``'s loop, starting each entry in ``tasks``."""
        while True:
            room = min(self._policy.batch, self._policy.max_in_flight - len(self._in_flight))
            claimed = 0
            try:
                if room > 0:
                    entries = await self._claim(room)
                    claimed, reads = len(entries), _SharedReads.on(self._clock)
                    for entry in entries:
                        self._in_flight.add(entry.id)
                        tasks.start_soon(self._tracked, entry, self._clock.now(), reads)
                if claimed < room or room <= 0:
                    before = self._clock.now() - timedelta(seconds=self._policy.retention_s)
                    await self._run.guarded(NOTIFY_FAILED, self._store.purge_finished, before)
            except ClarionError as exc:
                log.warning("notifications.round_failed", **failure_fields(exc))
            if room > 0 and claimed >= room:
                await anyio.sleep(0)  # more may be due: claim again at once
            else:
                await anyio.sleep(self._policy.poll_interval_s)

    async def _tracked(self, entry: OutboxEntry, claimed_at: datetime, reads: _SharedReads) -> None:
        """Handle ``entry`` in its own task: a failure is logged (the entry comes back when
        its lease passes), never raised into the task group the other entries share."""
        try:
            await self._handle(entry, claimed_at, reads)
        except ClarionError as exc:
            log.warning("notifications.round_failed", **failure_fields(exc))
        finally:
            self._in_flight.discard(entry.id)

    # -- one entry ---------------------------------------------------------------------------

    async def _handle(self, entry: OutboxEntry, claimed_at: datetime, reads: _SharedReads) -> None:
        try:
            if not entry.route_id or entry.event == DEADLINE:
                await self._handle_now(entry, reads)
                return
            # A route's deliveries go one at a time, in the order they were claimed.
            lane = self._lanes.setdefault(entry.route_id, anyio.Lock())
            try:
                async with lane:
                    await self._handle_in_lane(entry, claimed_at, reads)
            finally:
                if not lane.locked() and lane.statistics().tasks_waiting == 0:
                    self._lanes.pop(entry.route_id, None)
        except ClarionError as exc:
            log.warning("notification.failed", pending_id=entry.pending_id, **failure_fields(exc))
            await self._retry(entry, type(exc).__name__)

    async def _handle_in_lane(
        self, entry: OutboxEntry, claimed_at: datetime, reads: _SharedReads
    ) -> None:
        policy = self._policy
        waited = (self._clock.now() - claimed_at).total_seconds()
        if waited + 2 * policy.delivery_timeout_s > policy.lease_s:
            # Its lease could pass mid-attempt: leave it to come back when the lease passes.
            log.info("notification.lease_left", pending_id=entry.pending_id)
            return
        backing_off = self._route_backoff.get(entry.route_id)
        if backing_off is not None and self._clock.now() < backing_off[0]:
            await self._postpone(entry, backing_off[0])
            return
        async with self._slots:
            await self._handle_now(entry, reads)

    async def _handle_now(self, entry: OutboxEntry, reads: _SharedReads) -> None:
        """Handle ``entry`` with the shared read of its bundle (and, for a fan-out or a
        delivery, of its task)."""
        try:
            bundle = await reads.bundles.get(entry.pending_id, self._load_bundle)
            if bundle is None:
                await self._finish(entry, DROPPED, "the bundle no longer exists")
            elif not entry.route_id:
                await self._fan_out(entry, bundle, reads)
            elif entry.event == DEADLINE:
                await self._deadline(entry, bundle)
            else:
                await self._deliver(entry, bundle, reads)
        except ClarionError as exc:
            log.warning("notification.failed", pending_id=entry.pending_id, **failure_fields(exc))
            await self._retry(entry, type(exc).__name__)

    async def _finish(
        self,
        entry: OutboxEntry,
        status: str,
        why: str = "",
        follow_ups: tuple[NewEntry, ...] = (),
        reads: _SharedReads | None = None,
    ) -> None:
        """Finish ``entry``; within a round, and while fewer than ``max_in_flight`` entries
        would be in flight, the follow-ups due now are taken in the same transaction and
        handled at once (sharing ``reads``), so they wait for no later round."""
        tasks = _ROUND.get()
        room = self._policy.max_in_flight - len(self._in_flight)
        if not follow_ups or tasks is None or len(follow_ups) > room:
            # Nothing to take, no round to take it in, or no room: a later round claims them.
            finished = await self._run.guarded(
                NOTIFY_FAILED,
                self._store.finish,
                entry.id,
                entry.lease_token,
                status,
                follow_ups=follow_ups,
                error=why,
            )
        else:
            now = self._clock.now()
            taken = await self._run.guarded(
                NOTIFY_FAILED,
                self._store.finish_and_take,
                entry.id,
                entry.lease_token,
                status,
                follow_ups=follow_ups,
                now=now,
                lease_s=self._policy.lease_s,
                error=why,
            )
            finished = taken is not None
            shared = _SharedReads.on(self._clock) if reads is None else reads
            for handed in taken or ():
                self._in_flight.add(handed.id)
                tasks.start_soon(self._tracked, handed, now, shared)
        log.info(
            "notification.finished",
            pending_id=entry.pending_id,
            notification_event=entry.event,
            route_id=entry.route_id,
            status=status,
            reason=why,
            kept=finished,
        )

    async def _postpone(self, entry: OutboxEntry, until: datetime) -> None:
        """Reschedule ``entry`` to when its route's backoff ends (counts as an attempt)."""
        if entry.attempts + 1 >= self._policy.max_attempts:
            await self._retry(entry, "its route is backing off")
            return
        await self._run.guarded(
            NOTIFY_FAILED,
            self._store.retry,
            entry.id,
            entry.lease_token,
            until,
            "its route is backing off",
        )

    def _route_failed(self, route_id: str) -> None:
        """Count a transient failure of the route and start (or lengthen) its backoff; a route
        whose last backoff ended longer ago than the longest backoff starts over, and such
        stale records of other routes are forgotten."""
        now, cap = self._clock.now(), timedelta(seconds=self._policy.backoff_cap_s)
        for stale in [r for r, (until, _) in self._route_backoff.items() if until + cap < now]:
            del self._route_backoff[stale]
        _, failures = self._route_backoff.get(route_id, (now, 0))
        failures += 1
        delay = backoff(failures, self._policy.backoff_base_s, self._policy.backoff_cap_s)
        self._route_backoff[route_id] = (now + delay, failures)

    async def _retry(self, entry: OutboxEntry, why: str) -> None:
        attempts = entry.attempts + 1
        if attempts >= self._policy.max_attempts:
            await self._finish(entry, FAILED, f"gave up after {attempts} attempts: {why}")
            return
        delay = backoff(attempts, self._policy.backoff_base_s, self._policy.backoff_cap_s)
        due = self._clock.now() + delay
        await self._run.guarded(
            NOTIFY_FAILED, self._store.retry, entry.id, entry.lease_token, due, why
        )

    async def _load_bundle(self, pending_id: str) -> Bundle | None:
        return await self._run.guarded(NOTIFY_FAILED, self._claims.load_bundle, pending_id)

    async def _routes_for(self, workspace_id: str) -> tuple[Route, ...]:
        return await self._run.guarded(NOTIFY_FAILED, self._store.routes_for, workspace_id)

    async def _task_facts(self, task_id: str) -> _TaskFacts:
        """One read of a task and its workspace."""
        found = await self._run.guarded(NOTIFY_FAILED, self._host.get_task_and_workspace, task_id)
        if found is None:
            return _TaskFacts(task_exists=False)
        task, workspace = found
        return _TaskFacts(
            task_exists=True,
            workspace_id=task.workspace_id,
            workspace_exists=workspace is not None,
            owner_id=workspace.owner_id if workspace is not None else "",
        )

    async def _fan_out(self, entry: OutboxEntry, bundle: Bundle, reads: _SharedReads) -> None:
        facts = await reads.facts.get(bundle.task_id, self._task_facts)
        routes = await reads.routes.get(facts.workspace_id, self._routes_for)
        follow_ups: list[NewEntry] = []
        for route in routes:
            if route.hears(entry.event):
                follow_ups.append(_scheduled(entry, route, entry.event, entry.created_at))
            if entry.event == ANSWERABLE:
                follow_ups.extend(_policy_entries(entry, route))
        await self._finish(entry, DONE, follow_ups=tuple(follow_ups), reads=reads)

    async def _is_answerable(self, bundle: Bundle) -> bool:
        active = await self._run.guarded(
            NOTIFY_FAILED, self._claims.active_pending_ids, bundle.session_id
        )
        return bundle.pending_id in active

    async def _identity(self, route: Route) -> Identity | None:
        """The identity the route acts for: its user's, read now (None when the user is gone
        or inactive), else the system's."""
        if not route.user_id:
            return Identity.internal()
        user = None
        if self._users is not None:
            user = await self._run.guarded(NOTIFY_FAILED, self._users.get_user, route.user_id)
        if user is None or not user.active:
            return None
        return Identity.user(user.id, is_admin=user.is_admin)

    def _is_candidate(self, identity: Identity, bundle: Bundle) -> bool:
        """Issue #33: whether the route's user may decide ``bundle`` (any user when it names
        no candidates; a route acting for no user is the operator's and always notifies)."""
        try:
            check_assignment(bundle, identity, Assignment(groups_of=self._groups_of))
        except NotFound:
            return False
        return True

    def _may_see(self, identity: Identity, facts: _TaskFacts) -> bool:
        """L1c, as the authorizer's visibility rule applies it to the task's facts (the one
        rule every listing and ``load_visible_bundle`` apply): a missing task is seen by no
        scoped identity (M5a)."""
        visibility = self._authorizer.visibility(identity)
        if visibility.unscoped:
            return True
        return facts.task_exists and task_visible(
            visibility, facts.workspace_id, facts.workspace_exists, facts.owner_id
        )

    async def _deliver(self, entry: OutboxEntry, bundle: Bundle, reads: _SharedReads) -> None:
        route = await self._run.guarded(NOTIFY_FAILED, self._store.get_route, entry.route_id)
        if route is None:
            await self._finish(entry, DROPPED, "the route was removed")
            return
        if entry.event in ASKING_EVENTS and not await self._is_answerable(bundle):
            # No "please answer" after the answer.
            await self._finish(entry, DROPPED, "the bundle is no longer answerable")
            return
        winner = replay_winner(bundle.pending_id, bundle.rows)
        if entry.event == RESOLVED:
            if any(row.delivery_pending for row in bundle.rows):
                await self._retry(entry, "the answer is still being delivered")
                return
            if winner is None:
                await self._finish(entry, DROPPED, "the claim was rolled back")
                return
            if not _announces(entry, winner.responded_at):
                # A claim rolled back (a refused resume) and a later one won: only the later
                # claim's event announces the answer, so each route hears "resolved" once.
                await self._finish(entry, DROPPED, "a later claim superseded this one")
                return
        # Checked now, at send time: the route's user as it is now, and the task with the
        # shared read of it (a fan-out's read is as good: what it decides never changes).
        recipient = await self._identity(route)
        facts = None
        if recipient is not None:
            facts = await reads.facts.get(bundle.task_id, self._task_facts)
        if recipient is None or facts is None or not self._may_see(recipient, facts):
            await self._finish(entry, DROPPED, "the route's identity may not see this task")
            return
        if not await self._run.guarded(NOTIFY_FAILED, self._is_candidate, recipient, bundle):
            await self._finish(entry, DROPPED, "the route's user is not a candidate")
            return
        notifier = self._notifiers.get(route.channel.kind)
        if notifier is None:
            await self._finish(entry, FAILED, f"no {route.channel.kind} channel is configured")
            return
        notification = Notification(
            idempotency_key=entry.idempotency_key,
            event=entry.event,
            route=route,
            recipient=recipient,
            pending_id=bundle.pending_id,
            task_id=bundle.task_id,
            workspace_id=facts.workspace_id,
            status=_status(entry.event, bundle, winner),
            context=bundle.context,
            questions=bundle.questions,
            link=deep_link(self._public_url, bundle.pending_id),
            occurred_at=entry.due_at,
            sequence=entry.sequence,
            answers=winner.answers if winner is not None and route.include_answers else (),
            rejected=winner.rejected if winner is not None else False,
            resolution=winner,
            resolved_by=next((r.resolved_by for r in bundle.rows if r.resolved_by), None),
        )
        outcome = await self._attempt(notifier, notification)
        self._metrics.notification_delivered(route.channel.kind, outcome.status.value)
        if outcome.status is Sent.RETRY:
            self._route_failed(route.id)
        else:
            self._route_backoff.pop(route.id, None)
        if outcome.status is Sent.SENT:
            follow_ups: tuple[NewEntry, ...] = ()
            if entry.event == REMINDER and route.remind_after_s is not None:
                nxt = entry.due_at + timedelta(seconds=route.remind_after_s)
                follow_ups = (_reminder(entry, route, entry.sequence + 1, nxt),)
            if entry.event in ASKING_EVENTS and _updates_in_place(notifier):
                follow_ups += await self._settled_meanwhile(entry, route)
            # Its follow-ups (a terminal update: the bundle changed since) read anew.
            await self._finish(entry, DONE, follow_ups=follow_ups)
        elif outcome.status is Sent.RETRY:
            await self._retry(entry, outcome.detail)
        else:
            await self._finish(entry, FAILED, outcome.detail)

    async def _attempt(self, notifier: Notifier, notification: Notification) -> DeliveryOutcome:
        """One delivery attempt under the policy's deadline (the whole attempt)."""
        timeout = self._policy.delivery_timeout_s
        outcome = DeliveryOutcome(Sent.RETRY, f"no answer within {timeout:g} s")
        with anyio.move_on_after(timeout):
            try:
                outcome = await notifier.deliver(notification)
            except Exception as exc:  # a channel's bug must not stop the worker: retry it later
                log.warning(
                    "notification.channel_raised",
                    pending_id=notification.pending_id,
                    exc_info=True,
                )
                outcome = DeliveryOutcome(Sent.RETRY, f"channel raised {type(exc).__name__}")
        return outcome

    async def _settled_meanwhile(self, entry: OutboxEntry, route: Route) -> tuple[NewEntry, ...]:
        """For a channel that updates its messages in place (Slack, issue #18): when the bundle
        was settled while its message was being posted, the terminal update for this route,
        due now. Another process may already have applied the terminal event to the route's
        messages before this one was recorded; the update is idempotent, so a second one is
        harmless. The bundle is read anew: what matters is what happened while posting."""
        bundle = await self._load_bundle(entry.pending_id)
        if bundle is None:
            return ()
        winner = replay_winner(bundle.pending_id, bundle.rows)
        key, origin = f"{entry.idempotency_key}:settled", entry.origin_key
        if winner is not None:
            event = RESOLVED
            # Following from the winning claim's own event, so the delivery is recognised as
            # announcing the answer that stands (see ``_announces``).
            origin = event_key(RESOLVED, entry.pending_id, winner.responded_at)
            key = f"{origin}:{route.id}:{RESOLVED}:settled"
        elif bundle.rows and bundle.rows[0].display_status in (EXPIRED, CANCELLED):
            event = EXPIRED_EVENT if bundle.rows[0].display_status == EXPIRED else CANCELLED_EVENT
        else:
            return ()
        return (
            NewEntry(
                pending_id=entry.pending_id,
                event=event,
                route_id=route.id,
                due_at=self._clock.now(),
                idempotency_key=key,
                origin_key=origin,
            ),
        )

    async def _deadline(self, entry: OutboxEntry, bundle: Bundle) -> None:
        route = await self._run.guarded(NOTIFY_FAILED, self._store.get_route, entry.route_id)
        if route is None:
            await self._finish(entry, DROPPED, "the route was removed")
            return
        if not await self._is_answerable(bundle):
            await self._finish(entry, DROPPED, "the bundle was settled before its deadline")
            return
        policy = route.on_deadline
        if policy == ON_DEADLINE_EXPIRE:
            await self._expire(bundle)
        elif policy.startswith(DEFAULT_PREFIX):
            option_id = policy[len(DEFAULT_PREFIX) :]
            outcome = default_outcome(bundle, option_id)
            if outcome is None:
                await self._finish(entry, FAILED, f"no question offers option {option_id!r}")
                return
            try:
                # The deadline's one resolver call site (the lead adds surface="deadline").
                await self._answer(
                    Identity.internal(), bundle.pending_id, outcome, surface=Surface.DEADLINE
                )
            except ClarionError as exc:
                # A human answer won the race, or the option does not fit: nothing to retry.
                await self._finish(entry, FAILED, type(exc).__name__)
                return
        await self._finish(entry, DONE, policy)


def _status(event: str, bundle: Bundle, winner: Resolution | None) -> str:
    """The bundle's status as a notification reports it: the winner's, ``superseded`` for a
    bundle a newer turn closed (its rows still read pending: nothing is written, #30), else
    its first row's."""
    if winner is not None:
        return winner.status
    if event == SUPERSEDED_EVENT:
        return SUPERSEDED_EVENT
    return bundle.rows[0].display_status


def _updates_in_place(notifier: Notifier) -> bool:
    """The channel declares that it updates its messages in place (:class:`InPlaceNotifier`)."""
    return isinstance(notifier, InPlaceNotifier) and notifier.updates_in_place


def _announces(entry: OutboxEntry, responded_at: datetime) -> bool:
    """Whether the ``resolved`` delivery ``entry`` follows from the winning claim's own event
    (a claim rolled back after its event was recorded left an event too); an entry stored
    without its origin (none could be read from its key) is taken to."""
    winning = event_key(RESOLVED, entry.pending_id, responded_at)
    return not entry.origin_key or entry.origin_key == winning


def default_outcome(bundle: Bundle, option_id: str) -> Outcome | None:
    """The deadline's default answer: ``option_id`` selected on every question offering it;
    None when no question does."""
    answers = tuple(
        Answer(question_id=question.id, selected_options=(option_id,))
        for question in bundle.questions
        if option_id in question.option_ids()
    )
    return Outcome.answer(*answers) if answers else None


def _scheduled(
    entry: OutboxEntry,
    route: Route,
    event: str,
    due_at: datetime,
    sequence: int = 0,
    *,
    origin: str | None = None,
) -> NewEntry:
    """``event`` for ``route``, following from ``origin`` (None: ``entry`` itself), keyed by
    both and by ``sequence`` when there is one."""
    origin = entry.idempotency_key if origin is None else origin
    suffix = f":{sequence}" if sequence else ""
    return NewEntry(
        pending_id=entry.pending_id,
        event=event,
        route_id=route.id,
        due_at=due_at,
        sequence=sequence,
        idempotency_key=f"{origin}:{route.id}:{event}{suffix}",
        origin_key=origin,
    )


def _reminder(entry: OutboxEntry, route: Route, sequence: int, due_at: datetime) -> NewEntry:
    """Reminder ``sequence`` (1 and up) of ``route``, following from the event ``entry`` is
    (or follows from): one key however often it is rescheduled."""
    origin = entry.origin_key if entry.route_id else entry.idempotency_key
    return _scheduled(entry, route, REMINDER, due_at, sequence, origin=origin)


def _policy_entries(entry: OutboxEntry, route: Route) -> list[NewEntry]:
    """A route's reminder, escalation and deadline for a bundle that became answerable."""
    start = entry.created_at
    found: list[NewEntry] = []
    if route.remind_after_s is not None and route.hears(REMINDER):
        found.append(_reminder(entry, route, 1, start + timedelta(seconds=route.remind_after_s)))
    if route.escalate_after_s is not None and route.escalate_to:
        due = start + timedelta(seconds=route.escalate_after_s)
        escalation = _scheduled(entry, route, ESCALATION, due)
        found.append(attrs.evolve(escalation, route_id=route.escalate_to))
    if route.deadline_after_s is not None:
        found.append(
            _scheduled(entry, route, DEADLINE, start + timedelta(seconds=route.deadline_after_s))
        )
    return found


__all__ = ["SHARED_READ_S", "DeliveryPolicy", "NotificationWorker", "default_outcome"]
