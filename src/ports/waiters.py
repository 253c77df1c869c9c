"""Live delivery to an agent blocked on its own question (upstream facts §3)."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import Protocol

import attrs

from clarion.domain.errors import ClarionError
from clarion.domain.model import Resolution


class WaitEnd(enum.Enum):
    """Why a wait ended without a resolution."""

    NOT_FOUND = "not_found"  # no entry for this pending id (never registered, or gone)
    CANCELLED = "cancelled"  # cancel / cancel_session: the agent moved on or an operator cancelled
    TIMEOUT = "timeout"  # the wait's own timeout elapsed
    DELIVERY_FAILED = "delivery_failed"  # an answer arrived but its durable confirmation failed


class WaitEnded(ClarionError):
    """Raised by :meth:`Waiters.wait` when it ends without a resolution (REST answers 504, MCP
    a ``WAIT_ENDED`` tool error)."""

    def __init__(self, reason: WaitEnd, pending_id: str) -> None:
        super().__init__(f"{reason.value}: {pending_id}")
        self.reason = reason
        self.pending_id = pending_id


class Delivery(enum.Enum):
    """What :meth:`Waiters.deliver` achieved."""

    DELIVERED = "delivered"  # a live waiter ran the confirmation successfully and has the answer
    NO_WAITER = "no_waiter"  # nobody is waiting: take the detached path
    FAILED = "failed"  # a waiter took it but the confirmation failed or was abandoned


@attrs.frozen
class DeliveryResult:
    outcome: Delivery
    error: str = ""


Confirm = Callable[[], Awaitable[None]]
"""The responder's durable confirmation of one live delivery; it raises
:class:`ConfirmationFailed` (or any exception) when the delivery must not be handed over."""


class ConfirmationFailed(Exception):
    """A live delivery's durable confirmation did not go through: the finalize behind it
    failed, or (across processes) the delivery was abandoned before anyone confirmed it."""


class Waiters(Protocol):
    """Entries keyed by pending id, each with at most one resolution, waited on asynchronously.

    Contract (checked by ``clarion.ports.testing.waiters``):

    - ``register`` creates an entry for a pending id in a session (idempotent).
    - A task counts as waiting from the first step of its ``wait`` call (before it first
      yields), so a caller may register, start waiting, and only then make the bundle visible
      without an answer slipping past it.
    - ``wait`` blocks (one event per entry, no thread) until the entry is delivered, cancelled or
      the timeout elapses. On delivery the waiter runs the responder's ``confirm`` exactly once
      before returning the resolution; if ``confirm`` raises, the wait ends with
      DELIVERY_FAILED and the responder sees FAILED. Several concurrent waiters on one entry all
      receive the same resolution (broadcast). When a waiting task is cancelled (its caller went
      away) and no other task waits on the entry, the entry is removed, so the next ``deliver``
      returns NO_WAITER at once instead of blocking (fixes upstream §9.21).
    - ``deliver`` returns NO_WAITER when no task is waiting on a live entry; DELIVERED only after
      ``confirm`` succeeded; FAILED when ``confirm`` failed or nobody consumed the delivery
      within ``timeout`` seconds. An entry is delivered at most once.
    - ``cancel`` ends an unresolved entry's waits with CANCELLED and removes it; True only the
      first time. ``cancel_session`` does that for every unresolved entry of a session and
      returns their pending ids; resolved entries are dropped without turning into
      cancellations.
    """

    def register(self, pending_id: str, session_id: str) -> None: ...

    def has_entry(self, pending_id: str) -> bool: ...

    async def wait(self, pending_id: str, timeout: float) -> Resolution:
        """Block until resolved; raise :class:`WaitEnded` otherwise."""
        ...

    async def deliver(
        self, pending_id: str, resolution: Resolution, confirm: Confirm, timeout: float
    ) -> DeliveryResult: ...

    def cancel(self, pending_id: str) -> bool: ...

    def cancel_session(self, session_id: str) -> tuple[str, ...]: ...
