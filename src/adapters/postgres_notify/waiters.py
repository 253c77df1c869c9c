""":class:`clarion.ports.Waiters` across processes sharing one PostgreSQL database.

Each process keeps its blocked agents in a local :class:`~clarion.ports.Waiters` (the
in-process adapter); this class adds what crosses process boundaries, over ``NOTIFY``:

Delivery (the responder is the process whose resolver won the claim)
    1. The responder offers the resolution to its own entry, if any, and to every other
       process that is listening right now (``pg_stat_activity``), in one broadcast.
    2. A process with a waiting task hands the resolution to its local entry with a
       ``confirm`` that replies "taken" and waits for the responder's verdict; a process
       with nobody waiting replies "none".
    3. On the first "taken" (or local consumption) the responder runs its own ``confirm`` —
       the durable finalize — exactly once, and sends "settled" to every taker. Waiters hand
       the answer over only after a successful settlement; the responder reports DELIVERED
       only then.
    4. When every live process said "none", the answer takes the detached path (NO_WAITER).
       A process that stops listening meanwhile (``kill -9``, a dropped connection) no
       longer counts: liveness is re-read every ``liveness_interval`` seconds.

Releasing waits
    ``cancel`` and ``cancel_session`` act locally and are broadcast. A receiving process
    releases only entries whose own registration was committed before the request (it has
    seen its ``reg`` echoed back), so a late broadcast never cancels a newer ask.

Lost notifications
    When the listener reconnects, the process repeats the offers it is still waiting to hear
    about, announces its entries again, and re-reads the durable state of every bundle it
    holds waiters for: a bundle it took and that got finalized is handed over; one claimed
    without it went to the detached path (an answer: the wait ends CANCELLED and the resume
    carries it; a rejection, which resumes nobody, is handed over); a bundle no longer active
    releases its waits. A delivery still in flight is re-read later.

The responder's side lives in :mod:`~clarion.adapters.postgres_notify.responder`, the
holder's in :mod:`~clarion.adapters.postgres_notify.holder`; this class puts them behind the
port, announces its entries (which feeds the other processes' ``has_entry``, see
:mod:`~clarion.adapters.postgres_notify.registry`) and does the re-checks.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any, Final

import anyio
import attrs
import structlog
from anyio.abc import TaskGroup

from clarion.adapters.postgres_notify.durable import DurableReads, Settlement, settlement
from clarion.adapters.postgres_notify.holder import Holder
from clarion.adapters.postgres_notify.link import LinkUnavailable, NotifyLink
from clarion.adapters.postgres_notify.protocol import (
    Bye,
    Cancel,
    CancelSession,
    Envelope,
    Hello,
    Offer,
    Ping,
    Register,
    Reply,
    Settled,
    Snapshot,
    Unregister,
)
from clarion.adapters.postgres_notify.registry import RemoteEntries
from clarion.adapters.postgres_notify.responder import Responder
from clarion.domain.errors import failure_fields
from clarion.domain.model import Resolution
from clarion.domain.replay import replay_winner
from clarion.ports.claims import ClaimRepository
from clarion.ports.threads import Offload
from clarion.ports.waiters import Confirm, DeliveryResult, Waiters

log = structlog.get_logger(__name__)

LIVENESS_INTERVAL_S: Final = 1.0
RECHECK_INTERVAL_S: Final = 5.0
SETTLE_GRACE_S: Final = 300.0  # like the in-process adapter's started-confirmation grace


@attrs.define(eq=False)
class _Held:
    """An entry this process holds; ``echoed`` once its registration came back to us."""

    session_id: str
    echoed: bool = False


async def _already_confirmed() -> None:
    """The confirm for a resolution whose durable confirmation happened elsewhere."""


class PostgresWaiters:
    """Waiters whose waits may be answered from any process on the same database."""

    def __init__(
        self,
        *,
        local: Waiters,
        link: NotifyLink,
        claims: ClaimRepository,
        offload: Offload | None = None,
        liveness_interval: float = LIVENESS_INTERVAL_S,
        recheck_interval: float = RECHECK_INTERVAL_S,
        settle_grace: float = SETTLE_GRACE_S,
    ) -> None:
        self._local = local
        self._link = link
        self._durable = DurableReads(claims, offload)
        self._liveness_interval = liveness_interval
        self._recheck_interval = recheck_interval
        self._held: dict[str, _Held] = {}
        self._remote = RemoteEntries()
        self._pings: dict[str, anyio.Event] = {}
        self._heard: dict[str, int] = {}
        self._received = 0
        self._tasks: TaskGroup | None = None
        self._responder = Responder(
            local=local,
            link=link,
            spawn=self._spawn,
            liveness_interval=liveness_interval,
            settle_grace=settle_grace,
        )
        self._holder = Holder(
            local=local,
            link=link,
            durable=self._durable,
            spawn=self._spawn,
            sweep=self._sweep,
            recheck_interval=recheck_interval,
            settle_grace=settle_grace,
        )

    @property
    def instance(self) -> str:
        return self._link.instance

    def attach(self, tasks: TaskGroup) -> None:
        """Run background work (offer handling, re-checks) in ``tasks`` from now on."""
        self._tasks = tasks

    def _spawn(self, function: Callable[..., Any], *args: Any) -> None:
        if self._tasks is not None:
            self._tasks.start_soon(function, *args)

    # -- the port --------------------------------------------------------------------------

    def register(self, pending_id: str, session_id: str) -> None:
        """Create the local entry (idempotent) and announce it to the other processes."""
        self._local.register(pending_id, session_id)
        if pending_id not in self._held and self._local.has_entry(pending_id):
            self._held[pending_id] = _Held(session_id)
            self._link.post(Register(pending_id, session_id))

    def has_entry(self, pending_id: str) -> bool:
        """True when this process, or another as far as this one has heard, holds the entry."""
        return self._local.has_entry(pending_id) or self._remote.has(pending_id)

    async def wait(self, pending_id: str, timeout: float) -> Resolution:
        """Wait on the local entry; an entry held by another process is mirrored here first
        (deliveries are offered to every process, so both are answered)."""
        if not self._local.has_entry(pending_id):
            session_id = self._remote.session_of(pending_id)
            if session_id is not None:
                self.register(pending_id, session_id)
        try:
            return await self._local.wait(pending_id, timeout)
        finally:
            self._sweep((pending_id,))

    async def deliver(
        self, pending_id: str, resolution: Resolution, confirm: Confirm, timeout: float
    ) -> DeliveryResult:
        """Hand ``resolution`` to the waiters of every process (see the module docstring)."""
        result = await self._responder.deliver(pending_id, resolution, confirm, timeout)
        self._sweep((pending_id,))
        log.info("live.delivered", pending_id=pending_id, outcome=result.outcome.value)
        return result

    def cancel(self, pending_id: str) -> bool:
        """Cancel here and everywhere; True when an unresolved entry was known."""
        cancelled = self._local.cancel(pending_id)
        known = self._remote.forget(pending_id)
        self._link.post(Cancel(pending_id))
        self._sweep((pending_id,))
        return cancelled or known

    def cancel_session(self, session_id: str) -> tuple[str, ...]:
        """Release the session's waits here and everywhere; returns the ones released here
        (other processes release theirs when the broadcast reaches them)."""
        released = self._local.cancel_session(session_id)
        self._remote.forget_session(session_id)
        self._link.post(CancelSession(session_id))
        self._sweep([p for p, held in self._held.items() if held.session_id == session_id])
        return released

    async def sync(self) -> None:
        """Return once every notification committed before this call has been handled here.

        Raises:
            LinkUnavailable: the link is not running or the database is unreachable.
        """
        token = uuid.uuid4().hex
        arrived = self._pings[token] = anyio.Event()
        try:
            await self._link.send(Ping(token), to=self.instance)
            await arrived.wait()
        finally:
            self._pings.pop(token, None)

    # -- releasing waits ---------------------------------------------------------------------

    def _on_cancel(self, pending_id: str) -> None:
        held = self._held.get(pending_id)
        if held is not None and held.echoed:
            self._local.cancel(pending_id)
            self._sweep((pending_id,))

    def _on_cancel_session(self, session_id: str) -> None:
        pending_ids = [
            pending_id
            for pending_id, held in self._held.items()
            if held.session_id == session_id and held.echoed
        ]
        for pending_id in pending_ids:
            self._local.cancel(pending_id)
        self._sweep(pending_ids)

    def _sweep(self, pending_ids: Iterable[str]) -> None:
        """Announce the end of local entries that are gone (consumed, cancelled, left)."""
        for pending_id in list(pending_ids):
            if pending_id in self._held and not self._local.has_entry(pending_id):
                del self._held[pending_id]
                self._link.post(Unregister(pending_id))

    # -- messages and reconnection -----------------------------------------------------------

    def receive(self, envelope: Envelope) -> None:
        """Handle one message from the listener (in commit order)."""
        sender, message = envelope.sender, envelope.message
        self._received += 1
        if sender == self.instance:
            self._on_own(message)
            return
        self._heard[sender] = self._received
        match message:
            case Register(pending_id, session_id):
                self._remote.add(sender, pending_id, session_id)
            case Unregister(pending_id):
                self._remote.remove(sender, pending_id)
            case Snapshot(entries):
                self._remote.replace(sender, entries)
            case Hello():
                self._link.post(self._snapshot(), to=sender)
                self._responder.on_hello(sender)
            case Bye():
                self._remote.drop_instance(sender)
                self._responder.on_bye(sender)
            case Offer():
                self._holder.on_offer(sender, message)
            case Reply():
                self._responder.on_reply(sender, message)
            case Settled():
                self._holder.on_settled(message)
            case Cancel(pending_id):
                self._on_cancel(pending_id)
            case CancelSession(session_id):
                self._on_cancel_session(session_id)
            case _:
                pass

    def _on_own(self, message: object) -> None:
        match message:
            case Register(pending_id):
                if (held := self._held.get(pending_id)) is not None:
                    held.echoed = True
            case Snapshot(entries):
                for pending_id, _session_id in entries:
                    if (held := self._held.get(pending_id)) is not None:
                        held.echoed = True
            case Ping(token):
                if (arrived := self._pings.get(token)) is not None:
                    arrived.set()
            case _:
                pass

    def _snapshot(self) -> Snapshot:
        return Snapshot(tuple((p, held.session_id) for p, held in self._held.items()))

    def connected(self, reconnected: bool) -> None:
        """The listener is (again) listening: catch up on what may have been missed."""
        self._link.post(Hello())
        self._link.post(self._snapshot())
        if reconnected:
            self._responder.repeat_outstanding()
            self._spawn(self._recheck_all)

    async def _recheck_all(self) -> None:
        await self._holder.recheck_all()
        taking = self._holder.taking()
        for pending_id in [p for p in self._held if p not in taking]:
            await self._recheck_entry(pending_id)

    async def _recheck_entry(self, pending_id: str) -> None:
        """Reconcile one held entry with the durable state of its bundle."""
        held = self._held.get(pending_id)
        if held is None:
            return
        try:
            bundle = await self._durable.bundle(pending_id)
            state = settlement(bundle)
            if state is Settlement.IN_FLIGHT:
                self._spawn(self._recheck_later, pending_id)
            elif state is Settlement.SETTLED:
                assert bundle is not None
                winner = replay_winner(pending_id, bundle.rows)
                assert winner is not None
                await self._settle_missed(pending_id, winner)
            elif state is Settlement.OPEN and not await self._durable.is_active(
                pending_id, held.session_id
            ):
                log.info("live.released_inactive", pending_id=pending_id)
                self._local.cancel(pending_id)
                self._sweep((pending_id,))
        except Exception as exc:  # noqa: BLE001 - unreadable now; the next reconnection tries again
            log.warning("live.recheck_failed", pending_id=pending_id, **failure_fields(exc))

    async def _recheck_later(self, pending_id: str) -> None:
        await anyio.sleep(self._recheck_interval)
        if pending_id not in self._holder.taking():
            await self._recheck_entry(pending_id)

    async def _settle_missed(self, pending_id: str, winner: Resolution) -> None:
        """The bundle was resolved while this process could not hear the offer, so it took
        the detached path. An answer was handed to the resume dispatcher: release the wait
        (never answer twice). A rejection resumes nobody (R9): hand it to the waiter."""
        log.info("live.resolved_while_deaf", pending_id=pending_id, rejected=winner.rejected)
        if winner.rejected:
            await self._local.deliver(
                pending_id, winner, _already_confirmed, self._recheck_interval
            )
        else:
            self._local.cancel(pending_id)
        self._sweep((pending_id,))

    async def watch_members(self) -> None:
        """Every ``2 * liveness_interval`` seconds, :meth:`prune_vanished` (until cancelled)."""
        while True:
            await anyio.sleep(self._liveness_interval * 2)
            await self.prune_vanished()

    async def prune_vanished(self) -> None:
        """Forget the entries of processes that stopped listening without saying goodbye."""
        mark = self._received
        try:
            live = set(await self._link.members())
        except LinkUnavailable:
            return
        # A process heard from while the query ran is alive even if the query missed it.
        heard = {name for name, seen in self._heard.items() if seen > mark}
        self._remote.keep_only(live | heard)
        for name in [name for name in self._heard if name not in live | heard]:
            del self._heard[name]
        self._responder.forget_finished()
