"""The side of live delivery that holds blocked agents: taking offers from other processes.

An offer for an entry held here is handed to the local waiters with a ``confirm`` that tells
the responder "taken" and waits for its verdict ("settled"). The local waiters therefore
return the answer only after the responder's durable confirmation succeeded, exactly as in one
process. A verdict that does not come — it was sent while this process could not hear — is
read from the durable rows instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import anyio
import attrs
import structlog

from clarion.adapters.postgres_notify.durable import DurableReads, Settlement, settlement
from clarion.adapters.postgres_notify.link import NotifyLink
from clarion.adapters.postgres_notify.protocol import Offer, Reply, Settled
from clarion.domain.errors import failure_fields
from clarion.ports.waiters import ConfirmationFailed, Waiters

log = structlog.get_logger(__name__)

UNFINISHED = "clarification delivery confirmation did not finish"
ROLLED_BACK = "clarification delivery confirmation failed"
VANISHED = "the bundle of this delivery no longer exists"


@attrs.define(eq=False)
class Take:
    """One offer that this process accepted (or is deciding on)."""

    nonce: str
    pending_id: str
    offerer: str
    taken: bool = False  # a local waiter consumed it and "taken" was sent
    ok: bool | None = None
    error: str = ""
    decided: anyio.Event = attrs.field(factory=anyio.Event)

    def decide(self, ok: bool, error: str = "") -> None:
        if self.ok is None:
            self.ok, self.error = ok, error
            self.decided.set()


class Holder:
    """Offers from other processes for entries of the ``local`` waiters."""

    def __init__(
        self,
        *,
        local: Waiters,
        link: NotifyLink,
        durable: DurableReads,
        spawn: Callable[..., None],
        sweep: Callable[[Iterable[str]], None],
        recheck_interval: float,
        settle_grace: float,
    ) -> None:
        self._local = local
        self._link = link
        self._durable = durable
        self._spawn = spawn
        self._sweep = sweep
        self._recheck_interval = recheck_interval
        self._settle_grace = settle_grace
        self._takes: dict[str, Take] = {}

    def taking(self) -> set[str]:
        """Pending ids with an offer being taken here."""
        return {take.pending_id for take in self._takes.values()}

    def on_offer(self, sender: str, offer: Offer) -> None:
        take = self._takes.get(offer.nonce)
        if take is not None:  # a repeated offer: the first reply may have been lost
            if take.taken:
                self._link.post(Reply(offer.nonce, True), to=sender)
            return
        if not self._local.has_entry(offer.pending_id):
            self._link.post(Reply(offer.nonce, False), to=sender)
            return
        take = self._takes[offer.nonce] = Take(offer.nonce, offer.pending_id, sender)
        self._spawn(self._take, take, offer)

    def on_settled(self, settled: Settled) -> None:
        take = self._takes.get(settled.nonce)
        if take is not None:
            take.decide(settled.ok, settled.error)

    async def _take(self, take: Take, offer: Offer) -> None:
        async def confirm_remotely() -> None:
            take.taken = True
            await self._link.send(Reply(take.nonce, True), to=take.offerer)
            await self._await_verdict(take)

        try:
            await self._local.deliver(
                offer.pending_id, offer.resolution, confirm_remotely, offer.timeout
            )
        finally:
            self._sweep((offer.pending_id,))
            self._takes.pop(take.nonce, None)
            if not take.taken:
                self._link.post(Reply(take.nonce, False), to=take.offerer)

    async def _await_verdict(self, take: Take) -> None:
        with anyio.move_on_after(self._settle_grace):
            while not take.decided.is_set():
                with anyio.move_on_after(self._recheck_interval):
                    await take.decided.wait()
                if not take.decided.is_set():
                    await self.recheck(take)
        take.decide(False, UNFINISHED)
        if not take.ok:
            raise ConfirmationFailed(take.error)

    async def recheck_all(self) -> None:
        """After a reconnection: settle every taken offer whose verdict may have been lost."""
        for take in list(self._takes.values()):
            if take.taken and not take.decided.is_set():
                await self.recheck(take)

    async def recheck(self, take: Take) -> None:
        """The verdict is late: the durable rows say whether the finalize happened."""
        try:
            state = settlement(await self._durable.bundle(take.pending_id))
        except Exception as exc:  # noqa: BLE001 - unreadable now; the next re-check tries again
            log.warning("live.recheck_failed", pending_id=take.pending_id, **failure_fields(exc))
            return
        # Still in flight: the responder may be finishing it even while this process cannot
        # hear it, so only its outcome decides — or, if it crashed, the restore that a
        # restarting replica's reconciliation performs (facts §4.6), or the grace running out.
        if state is Settlement.SETTLED:
            take.decide(True)
        elif state is not Settlement.IN_FLIGHT:
            take.decide(False, VANISHED if state is Settlement.UNKNOWN else ROLLED_BACK)
