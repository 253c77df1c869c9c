"""Notifications (issue #17): the channel port, the durable outbox and routing store, and the
answer-link issuer the e-mail channel asks for a recipient's link.

Events are recorded by the claim repository in the same transaction as the change that causes
them (a bundle created, claimed, expired or cancelled); the worker in
:mod:`clarion.app.usecases.notifications` turns them into deliveries with :class:`Notifier`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import attrs

from clarion.domain.model import Answer, Identity, Question
from clarion.domain.notifications import NewEntry, OutboxEntry, Route, RouteSpec


class Sent(enum.Enum):
    """What one delivery attempt achieved."""

    SENT = "sent"  # the channel accepted it
    RETRY = "retry"  # a transient failure: try again later (with backoff)
    PERMANENT = "permanent"  # it can never succeed (bad address, 4xx): give up


@attrs.frozen
class DeliveryOutcome:
    status: Sent
    detail: str = ""  # for the log and the entry's last error; never answer text


@attrs.frozen(kw_only=True)
class Notification:
    """One message to one route's recipient, built when it is delivered.

    ``answers`` is empty unless the route opted in (``include_answers``) and the event is
    ``resolved``. ``link`` is the inbox deep link ``<public url>/#<pending_id>``.
    """

    idempotency_key: str
    event: str
    route: Route
    recipient: Identity
    pending_id: str
    task_id: str
    workspace_id: str
    status: str
    context: str
    questions: tuple[Question, ...]
    link: str
    occurred_at: datetime
    sequence: int = 0
    answers: tuple[Answer, ...] = ()
    rejected: bool = False


class Notifier(Protocol):
    """A channel (e-mail, webhook, Apprise).

    Contract: ``deliver`` sends ``notification`` once and says how it went; it never raises for
    a failure of the channel (it returns RETRY or PERMANENT). The same ``idempotency_key`` may
    be delivered more than once (at-least-once); a channel that can carry it to the receiver
    does (the webhook's ``Idempotency-Key`` header, the e-mail's ``Message-ID``).
    """

    async def deliver(self, notification: Notification) -> DeliveryOutcome: ...


class AnswerLinkIssuer(Protocol):
    def link_for(self, recipient: Identity, pending_id: str) -> str:
        """An absolute URL of a signed, single-use answer link for this recipient."""
        ...


class NotificationRoutes(Protocol):
    """Durable routes (contract: ``clarion.ports.testing.notifications``).

    ``routes_for(workspace_id)`` returns the routes of exactly that workspace ("" = the
    default routes, for workspace-less tasks), oldest first; ids come from the store's
    ``IdGenerator`` and ``created_at`` from its clock.
    """

    def add_route(self, spec: RouteSpec, *, created_by: str) -> Route: ...

    def get_route(self, route_id: str) -> Route | None: ...

    def list_routes(self) -> tuple[Route, ...]:
        """Every route, oldest first."""
        ...

    def routes_for(self, workspace_id: str) -> tuple[Route, ...]: ...

    def remove_route(self, route_id: str) -> bool:
        """False when there was no such route. Its outstanding outbox work is dropped when due."""
        ...


class NotificationOutbox(Protocol):
    """The durable outbox (contract: ``clarion.ports.testing.notifications``).

    - Entries are written by the claim repository with the transition that causes them
      (``answerable`` with create, ``resolved`` with a winning claim, ``expired`` and
      ``cancelled`` with those transitions — never for a lost claim or a no-op), and by
      :meth:`finish` as follow-ups.
    - ``claim_due`` hands out due entries (``status`` "due", ``due_at`` ≤ ``now``, no live
      lease) oldest due first, each with a fresh ``lease_token`` valid until ``now + lease_s``.
      Two concurrent callers never receive the same entry while its lease lives; an entry
      whose holder died comes back once the lease passes (at-least-once).
    - ``finish`` and ``retry`` act only for the current lease holder (False otherwise, nothing
      written). ``finish`` sets the final status and records ``follow_ups`` in the same
      transaction; a follow-up whose ``idempotency_key`` already exists is skipped, so a
      fan-out repeated after a crash records nothing twice.
    """

    def claim_due(
        self, now: datetime, *, limit: int, lease_s: float
    ) -> tuple[OutboxEntry, ...]: ...

    def finish(
        self,
        entry_id: str,
        lease_token: str,
        status: str,
        *,
        follow_ups: Sequence[NewEntry] = (),
        error: str = "",
    ) -> bool: ...

    def retry(self, entry_id: str, lease_token: str, due_at: datetime, error: str) -> bool:
        """Count an attempt, release the lease and make the entry due again at ``due_at``."""
        ...

    def entries(self, pending_id: str | None = None) -> tuple[OutboxEntry, ...]:
        """Every entry (of one bundle when given), oldest first — for operators and tests."""
        ...

    def purge_finished(self, before: datetime) -> int:
        """Delete finished (not due) entries created before ``before``; returns how many."""
        ...


class NotificationStore(NotificationRoutes, NotificationOutbox, Protocol):
    """Routes and outbox in one store (the storage unit ships both)."""


__all__ = [
    "AnswerLinkIssuer",
    "DeliveryOutcome",
    "Notification",
    "NotificationOutbox",
    "NotificationRoutes",
    "NotificationStore",
    "Notifier",
    "Sent",
]
