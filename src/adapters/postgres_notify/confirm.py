"""One delivery attempt's durable confirmation, shared by every waiter that consumes it.

The responder's ``confirm`` (the resolver's finalize) runs in the responder's process, exactly
once, however many waiters take the delivery — in this process or in others. Whoever calls
first runs it; later callers wait for its result. Once started it runs to its end, shielded
from the caller's cancellation (facts §3). A delivery the responder gave up on before anyone
started it is *abandoned*: calling it afterwards fails, so nobody hands over an answer the
responder has already routed elsewhere.
"""

from __future__ import annotations

import anyio

from clarion.ports.waiters import Confirm, ConfirmationFailed, Delivery, DeliveryResult


class SharedConfirm:
    """A :data:`clarion.ports.waiters.Confirm` that runs the wrapped one at most once."""

    def __init__(self, confirm: Confirm) -> None:
        self._confirm = confirm
        self.started = False
        self.done = anyio.Event()
        self.error: str | None = None

    async def __call__(self) -> None:
        """Run the confirmation (first caller) or wait for it (later callers).

        Raises:
            ConfirmationFailed: it failed, or the delivery was abandoned.
        """
        if not self.started and not self.done.is_set():
            self.started = True
            with anyio.CancelScope(shield=True):
                try:
                    await self._confirm()
                except Exception as exc:  # noqa: BLE001 - any failure fails this one delivery
                    self.error = str(exc) or type(exc).__name__
                finally:
                    self.done.set()
        else:
            await self.done.wait()
        if self.error is not None:
            raise ConfirmationFailed(self.error)

    def abandon(self, reason: str) -> bool:
        """Give up on a delivery nobody has started confirming; False when one has."""
        if self.started or self.done.is_set():
            return False
        self.error = reason
        self.done.set()
        return True

    def result(self) -> DeliveryResult:
        """What the responder reports once :attr:`done` is set."""
        if self.error is None:
            return DeliveryResult(Delivery.DELIVERED)
        return DeliveryResult(Delivery.FAILED, error=self.error)
