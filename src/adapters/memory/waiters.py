"""Live delivery to agents blocked on their own question, inside one process (upstream facts §3).

Each entry owns one event; a waiting agent is a suspended task, never a thread, so ten thousand
agents can wait at once. The entries belong to one event loop: call every method from that
loop (threads reach it through ``anyio.from_thread``).

Differences from upstream's store, on purpose:

- A waiter whose caller went away (its task was cancelled) or whose own timeout elapsed is the
  last one on its entry → the entry is removed, so the next answer takes the detached path at
  once instead of blocking for the delivery timeout and failing (fixes §9.21).
- ``deliver`` on an entry nobody is waiting on removes it and returns NO_WAITER: the answer goes
  to the resume dispatcher, so a later ``wait`` must not block for it.
- A delivery whose every waiter left before any of them started the confirmation is reported as
  NO_WAITER (the detached path), not as a failure.
"""

from __future__ import annotations

import enum

import anyio
import attrs

from clarion.domain.model import Resolution
from clarion.ports.waiters import Confirm, Delivery, DeliveryResult, WaitEnd, WaitEnded

# Once a waiter has started the durable confirmation it owns that work (facts §3): a responder
# whose own deadline passed keeps waiting for its result, but no longer than this.
STARTED_CONFIRMATION_GRACE_S = 300.0


class _Phase(enum.Enum):
    OPEN = "open"  # registered, no resolution yet
    DELIVERED = "delivered"  # a resolution was handed over and is being confirmed
    CANCELLED = "cancelled"


@attrs.define(eq=False)
class _Entry:
    pending_id: str
    session_id: str
    wake: anyio.Event = attrs.field(factory=anyio.Event)  # the entry's one event
    phase: _Phase = _Phase.OPEN
    waiting: int = 0
    resolution: Resolution | None = None
    confirm: Confirm | None = None
    confirm_started: bool = False
    settled: anyio.Event | None = None  # set once ``outcome`` is known (the responder waits)
    outcome: DeliveryResult | None = None


class InMemoryWaiters:
    """The in-process :class:`clarion.ports.Waiters`: one event per entry, no thread per waiter."""

    def __init__(self, *, started_confirmation_grace: float = STARTED_CONFIRMATION_GRACE_S) -> None:
        self._grace = started_confirmation_grace
        self._entries: dict[str, _Entry] = {}
        self._by_session: dict[str, set[str]] = {}

    def __len__(self) -> int:
        """How many entries are live (registered, not yet consumed, cancelled or removed)."""
        return len(self._entries)

    def register(self, pending_id: str, session_id: str) -> None:
        """Create the entry for ``pending_id`` unless it exists (idempotent)."""
        if pending_id in self._entries:
            return
        self._entries[pending_id] = _Entry(pending_id=pending_id, session_id=session_id)
        self._by_session.setdefault(session_id, set()).add(pending_id)

    def has_entry(self, pending_id: str) -> bool:
        return pending_id in self._entries

    def waiting(self, pending_id: str) -> int:
        """How many tasks wait on ``pending_id`` now (0 without an entry); a task counts from
        the first step of its ``wait``, so a test can yield until an asker is waiting."""
        entry = self._entries.get(pending_id)
        return entry.waiting if entry is not None else 0

    async def wait(self, pending_id: str, timeout: float) -> Resolution:
        """Block until the entry is delivered and confirmed.

        Raises:
            WaitEnded: NOT_FOUND without an entry, CANCELLED when it was cancelled, TIMEOUT when
                ``timeout`` seconds passed, DELIVERY_FAILED when the confirmation failed or the
                responder gave up before anyone consumed the delivery.
        """
        entry = self._entries.get(pending_id)
        if entry is None:
            raise WaitEnded(WaitEnd.NOT_FOUND, pending_id)
        entry.waiting += 1  # before the first yield: the port's "counts as waiting" promise
        try:
            with anyio.move_on_after(timeout):
                await entry.wake.wait()
            if not entry.wake.is_set():
                self._leave(entry)
                raise WaitEnded(WaitEnd.TIMEOUT, pending_id)
            if entry.phase is _Phase.CANCELLED:
                raise WaitEnded(WaitEnd.CANCELLED, pending_id)
            return await self._consume(entry)
        except anyio.get_cancelled_exc_class():
            self._leave(entry)
            raise
        finally:
            entry.waiting -= 1

    async def _consume(self, entry: _Entry) -> Resolution:
        if entry.outcome is None and not entry.confirm_started:
            entry.confirm_started = True
            confirm = entry.confirm
            assert confirm is not None  # set together with phase DELIVERED
            # The confirmation is the durable finalize; once started it runs to its end even if
            # this waiter's caller goes away meanwhile (facts §3).
            with anyio.CancelScope(shield=True):
                try:
                    await confirm()
                except Exception as exc:  # noqa: BLE001 - any failure fails this one delivery
                    self._settle(entry, DeliveryResult(Delivery.FAILED, error=str(exc)))
                else:
                    self._settle(entry, DeliveryResult(Delivery.DELIVERED))
        elif entry.outcome is None:
            assert entry.settled is not None
            await entry.settled.wait()  # another waiter on this entry is confirming
        if entry.outcome is not None and entry.outcome.outcome is Delivery.DELIVERED:
            assert entry.resolution is not None
            return entry.resolution
        raise WaitEnded(WaitEnd.DELIVERY_FAILED, entry.pending_id)

    def _leave(self, entry: _Entry) -> None:
        """A waiter leaves without a resolution; the last one cleans up after itself (§9.21)."""
        if entry.waiting > 1:
            return
        if entry.phase is _Phase.OPEN:
            self._remove(entry)
        elif entry.phase is _Phase.DELIVERED and not entry.confirm_started:
            # Nobody will ever consume this delivery: hand it back to the detached path.
            entry.confirm_started = True
            self._settle(entry, DeliveryResult(Delivery.NO_WAITER))

    async def deliver(
        self, pending_id: str, resolution: Resolution, confirm: Confirm, timeout: float
    ) -> DeliveryResult:
        """Hand ``resolution`` to the entry's waiters, who run ``confirm`` once before taking it.

        Returns DELIVERED only after ``confirm`` succeeded; NO_WAITER when nobody is waiting
        (the entry, if any, is removed); FAILED when ``confirm`` failed, nobody consumed the
        delivery within ``timeout`` seconds, or the entry was already delivered.
        """
        entry = self._entries.get(pending_id)
        if entry is None or entry.phase is _Phase.CANCELLED:
            return DeliveryResult(Delivery.NO_WAITER)
        if entry.phase is _Phase.DELIVERED:
            return DeliveryResult(Delivery.FAILED, error="clarification already delivered")
        if entry.waiting == 0:
            self._remove(entry)
            return DeliveryResult(Delivery.NO_WAITER)
        settled = anyio.Event()
        entry.phase, entry.resolution, entry.confirm = _Phase.DELIVERED, resolution, confirm
        entry.settled = settled
        entry.wake.set()
        with anyio.move_on_after(timeout):
            await settled.wait()
        if entry.outcome is None and not entry.confirm_started:
            # Abandoned: a waiter arriving later must not confirm a delivery we gave up on.
            entry.confirm_started = True
            self._settle(
                entry,
                DeliveryResult(Delivery.FAILED, error="clarification delivery was not consumed"),
            )
        elif entry.outcome is None:
            with anyio.move_on_after(self._grace):
                await settled.wait()
        if entry.outcome is None:
            return DeliveryResult(
                Delivery.FAILED, error="clarification delivery confirmation did not finish"
            )
        return entry.outcome

    def _settle(self, entry: _Entry, outcome: DeliveryResult) -> None:
        entry.outcome = outcome
        self._remove(entry)
        if entry.settled is not None:
            entry.settled.set()

    def cancel(self, pending_id: str) -> bool:
        """End an unresolved entry's waits with CANCELLED; True only the first time."""
        entry = self._entries.get(pending_id)
        if entry is None or entry.phase is not _Phase.OPEN:
            return False
        self._cancel(entry)
        return True

    def cancel_session(self, session_id: str) -> tuple[str, ...]:
        """Cancel every unresolved entry of the session; drop its delivered ones quietly."""
        cancelled: list[str] = []
        for pending_id in sorted(self._by_session.get(session_id, ())):
            entry = self._entries[pending_id]
            if entry.phase is _Phase.OPEN:
                self._cancel(entry)
                cancelled.append(pending_id)
            else:
                # A delivery in flight keeps its waiters; it only leaves the index.
                self._remove(entry)
        return tuple(cancelled)

    def _cancel(self, entry: _Entry) -> None:
        entry.phase = _Phase.CANCELLED
        self._remove(entry)
        entry.wake.set()

    def _remove(self, entry: _Entry) -> None:
        if self._entries.get(entry.pending_id) is not entry:
            return
        del self._entries[entry.pending_id]
        session = self._by_session.get(entry.session_id)
        if session is not None:
            session.discard(entry.pending_id)
            if not session:
                del self._by_session[entry.session_id]
