"""The side of live delivery that won a claim: offering the answer to whoever waits for it.

The answer is handed to this process's own waiters (if it holds the entry) and, in one
broadcast, offered to every other process listening right now. The first waiter to take it —
here or elsewhere — starts the responder's ``confirm`` (the durable finalize), which runs once;
every taker is then sent the verdict. When every listening process has said it has nobody
waiting, the answer goes to the detached path (NO_WAITER). Liveness is re-read every
``liveness_interval`` seconds, so a process that stops listening mid-offer stops counting.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Final

import anyio
import attrs
import structlog

from clarion.adapters.postgres_notify.confirm import SharedConfirm
from clarion.adapters.postgres_notify.link import LinkUnavailable, NotifyLink
from clarion.adapters.postgres_notify.protocol import Offer, Reply, Settled
from clarion.domain.model import Resolution
from clarion.ports.waiters import Confirm, ConfirmationFailed, Delivery, DeliveryResult, Waiters

log = structlog.get_logger(__name__)

FINISHED_LINGER_S: Final = 120.0  # late replies to a finished offer still get its verdict
NOT_CONSUMED: Final = "clarification delivery was not consumed"
UNFINISHED: Final = "clarification delivery confirmation did not finish"
UNAVAILABLE: Final = "live delivery is unavailable"


class _Signal:
    """Wakes whoever waits on the event taken before the state they checked changed."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def current(self) -> anyio.Event:
        return self._event

    def notify(self) -> None:
        self._event.set()
        self._event = anyio.Event()


@attrs.define(eq=False)
class _Offered:
    """One delivery attempt offered to other processes."""

    message: Offer
    confirm: SharedConfirm
    expected: set[str]
    signal: _Signal
    declined: set[str] = attrs.field(factory=set)
    takers: set[str] = attrs.field(factory=set)
    finished: bool = False

    @property
    def everyone_declined(self) -> bool:
        return not self.takers and self.expected <= self.declined


@attrs.define(eq=False)
class _Attempt:
    """Everything one :meth:`Responder.deliver` call watches."""

    confirm: SharedConfirm
    signal: _Signal = attrs.field(factory=_Signal)
    held_here: bool = False
    local_result: DeliveryResult | None = None
    offered: _Offered | None = None

    @property
    def taken(self) -> bool:
        return self.confirm.started or (self.offered is not None and bool(self.offered.takers))

    @property
    def declined(self) -> bool:
        here = not self.held_here or self.local_result is not None
        return here and (self.offered is None or self.offered.everyone_declined)


class Responder:
    """Deliveries started in this process."""

    def __init__(
        self,
        *,
        local: Waiters,
        link: NotifyLink,
        spawn: Callable[..., None],
        liveness_interval: float,
        settle_grace: float,
    ) -> None:
        self._local = local
        self._link = link
        self._spawn = spawn
        self._liveness_interval = liveness_interval
        self._settle_grace = settle_grace
        self._offers: dict[str, _Offered] = {}
        self._finished: deque[tuple[float, str]] = deque()

    async def deliver(
        self, pending_id: str, resolution: Resolution, confirm: Confirm, timeout: float
    ) -> DeliveryResult:
        """Deliver to the waiters here and elsewhere; see the module docstring.

        Returns DELIVERED once ``confirm`` succeeded for a waiter that took the answer,
        FAILED when it failed (or nobody took the answer within ``timeout``, or no other
        process could be asked), NO_WAITER when nobody anywhere is waiting.
        """
        attempt = _Attempt(SharedConfirm(confirm), held_here=self._local.has_entry(pending_id))
        result = DeliveryResult(Delivery.FAILED, error=UNAVAILABLE)
        async with anyio.create_task_group() as tasks:
            if attempt.held_here:
                tasks.start_soon(self._deliver_here, attempt, pending_id, resolution, timeout)
            try:
                attempt.offered = await self._offer(pending_id, resolution, attempt, timeout)
            except LinkUnavailable:
                log.warning("live.offer_failed", pending_id=pending_id)
                if not attempt.held_here:
                    attempt.confirm.abandon(UNAVAILABLE)
                    return result
            try:
                result = await self._decide(attempt, timeout)
            finally:
                if attempt.offered is not None:
                    attempt.offered.finished = True
                    deadline = time.monotonic() + FINISHED_LINGER_S
                    self._finished.append((deadline, attempt.offered.message.nonce))
        return result

    async def _deliver_here(
        self, attempt: _Attempt, pending_id: str, resolution: Resolution, timeout: float
    ) -> None:
        attempt.local_result = await self._local.deliver(
            pending_id, resolution, attempt.confirm, timeout
        )
        attempt.signal.notify()

    async def _offer(
        self, pending_id: str, resolution: Resolution, attempt: _Attempt, timeout: float
    ) -> _Offered | None:
        if not self._link.running:
            return None
        self.forget_finished()
        peers = set(await self._link.members()) - {self._link.instance}
        if not peers:
            return None
        message = Offer(uuid.uuid4().hex, pending_id, resolution, timeout)
        offered = _Offered(message, attempt.confirm, expected=peers, signal=attempt.signal)
        self._offers[message.nonce] = offered
        try:
            await self._link.send(message)
        except LinkUnavailable:
            del self._offers[message.nonce]
            raise
        return offered

    async def _decide(self, attempt: _Attempt, timeout: float) -> DeliveryResult:
        shared = attempt.confirm
        with anyio.move_on_after(timeout):
            while True:
                changed = attempt.signal.current()
                if attempt.taken:
                    await shared.done.wait()
                    return shared.result()
                if attempt.declined:
                    shared.abandon(NOT_CONSUMED)
                    return DeliveryResult(Delivery.NO_WAITER)
                with anyio.move_on_after(self._liveness_interval):
                    await changed.wait()
                if attempt.offered is not None and not changed.is_set():
                    await self._drop_vanished(attempt.offered)
        if shared.abandon(NOT_CONSUMED):
            return DeliveryResult(Delivery.FAILED, error=NOT_CONSUMED)
        with anyio.move_on_after(self._settle_grace):
            await shared.done.wait()
        if shared.done.is_set():
            return shared.result()
        return DeliveryResult(Delivery.FAILED, error=UNFINISHED)

    async def _drop_vanished(self, offered: _Offered) -> None:
        """Processes that stopped listening will never reply: stop expecting them."""
        try:
            live = set(await self._link.members())
        except LinkUnavailable:
            return
        offered.expected &= live
        offered.signal.notify()

    def forget_finished(self) -> None:
        now = time.monotonic()
        while self._finished and self._finished[0][0] <= now:
            self._offers.pop(self._finished.popleft()[1], None)

    def on_reply(self, sender: str, reply: Reply) -> None:
        offered = self._offers.get(reply.nonce)
        if offered is None:
            if reply.taken:
                self._link.post(Settled(reply.nonce, False, NOT_CONSUMED), to=sender)
            return
        if reply.taken:
            offered.takers.add(sender)
            self._spawn(self._settle, offered, sender)
        else:
            offered.declined.add(sender)
        offered.signal.notify()

    async def _settle(self, offered: _Offered, taker: str) -> None:
        """Run (or wait for) the confirmation and send its verdict to ``taker``."""
        try:
            await offered.confirm()
        except ConfirmationFailed as failed:
            verdict = Settled(offered.message.nonce, False, str(failed))
        else:
            verdict = Settled(offered.message.nonce, True)
        offered.signal.notify()
        try:
            await self._link.send(verdict, to=taker)
        except LinkUnavailable:
            # The taker re-reads the durable state when the verdict does not come.
            log.warning("live.settle_unsent", pending_id=offered.message.pending_id)

    def on_hello(self, sender: str) -> None:
        """``sender`` (re)started listening: repeat the offers it has not answered yet."""
        for offered in self._offers.values():
            if not offered.finished and sender in offered.expected:
                self._link.post(offered.message, to=sender)

    def on_bye(self, sender: str) -> None:
        for offered in self._offers.values():
            offered.expected.discard(sender)
            offered.signal.notify()

    def repeat_outstanding(self) -> None:
        """This process reconnected: replies to its offers may have been lost."""
        for offered in self._offers.values():
            if not offered.finished:
                self._link.post(offered.message)
