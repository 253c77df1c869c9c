"""Notifications (issue #17): the channel port, the durable outbox and routing store, and the
answer-link issuer the e-mail channel asks for a recipient's link.

Events are recorded by the claim repository atomically with the change that causes them (a
bundle created, claimed, expired or cancelled); the worker in
:mod:`clarion.app.usecases.notifications` turns them into deliveries with :class:`Notifier`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

import attrs

from clarion.domain.model import Answer, Identity, Question, Resolution
from clarion.domain.notifications import Channel, NewEntry, OutboxEntry, Route, RouteSpec
from clarion.domain.resolved_by import ResolvedBy


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
    # For a channel that shows the outcome where people could answer (Slack, issue #18): the
    # winner's resolution and who resolved it, on every ``resolved`` event whatever
    # ``include_answers`` says — everyone who could answer there sees the winner anyway (R2).
    resolution: Resolution | None = None
    resolved_by: ResolvedBy | None = None


class Notifier(Protocol):
    """A channel (e-mail, webhook, Apprise).

    Contract: ``deliver`` sends ``notification`` once and says how it went; it never raises for
    a failure of the channel (it returns RETRY or PERMANENT). The same ``idempotency_key`` may
    be delivered more than once (at-least-once); a channel that can carry it to the receiver
    does (the webhook's ``Idempotency-Key`` header, the e-mail's ``Message-ID``). A channel
    that updates its messages in place declares it (:class:`InPlaceNotifier`).
    """

    async def deliver(self, notification: Notification) -> DeliveryOutcome: ...


@runtime_checkable
class InPlaceNotifier(Notifier, Protocol):
    """A capability a :class:`Notifier` may declare (issue #32): ``updates_in_place`` is True
    for a channel that posts messages and updates them in place when the bundle ends (Slack).
    When the bundle was settled while such a message was being posted, the worker schedules
    the route's terminal update once more. Without the capability, or with it False, a sent
    message is final."""

    @property
    def updates_in_place(self) -> bool: ...


class DestinationCheck(Protocol):
    """Whether a route may deliver to a channel's destination (issue #29 S4), asked when a
    route is added; delivery checks again when it connects."""

    async def check(self, channel: Channel, *, trusted: bool) -> None:
        """Accept ``channel`` or refuse it. ``trusted`` is an administrator or the operator.

        Raises:
            ValidationError: (``field`` "channel") the destination is an internal address the
                operator did not allow, or (for an untrusted caller) an Apprise URL that is
                not one of the hosted services or chooses HTTP methods, headers or redirects.
        """
        ...


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

    - Events are recorded by the claim repository atomically with the transition that causes
      them (``answerable`` with create, ``resolved`` with a winning claim, ``expired`` and
      ``cancelled`` with those transitions — never for a lost claim or a no-op), one entry per
      occurrence (:func:`clarion.domain.notifications.event_key`: a claim rolled back and won
      again at the same instant is one), at the transition's own time; ``claim_due`` and
      ``entries`` see every event recorded before they were called (a store may keep events
      with the transition's rows and take them into the outbox then). Follow-ups are written
      by :meth:`finish` (or :meth:`finish_and_take`).
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

    def finish_and_take(
        self,
        entry_id: str,
        lease_token: str,
        status: str,
        *,
        follow_ups: Sequence[NewEntry],
        now: datetime,
        lease_s: float,
        error: str = "",
    ) -> tuple[OutboxEntry, ...] | None:
        """:meth:`finish`, handing the caller at once, under fresh leases valid until
        ``now + lease_s`` (as :meth:`claim_due` would), the follow-ups it recorded that are due
        by ``now``, in the same transaction; so an event's deliveries need no second round.
        A follow-up skipped for its known key is not handed out (someone else has it). None
        when the caller no longer holds the entry (nothing written)."""
        ...

    def retry(self, entry_id: str, lease_token: str, due_at: datetime, error: str) -> bool:
        """Count an attempt, release the lease and make the entry due again at ``due_at``."""
        ...

    def entries(self, pending_id: str | None = None) -> tuple[OutboxEntry, ...]:
        """Every entry (of one bundle when given), oldest first, the events recorded so far
        included — for operators, tests and the worker's check of a ``resolved`` event's
        origin."""
        ...

    def purge_finished(self, before: datetime) -> int:
        """Delete finished (not due) entries created before ``before``; returns how many."""
        ...


@attrs.frozen(kw_only=True)
class PostedMessage:
    """A message a channel posted for a bundle, so terminal events can update it in place
    (issue #18). ``channel_id`` is the conversation as the channel's service names it and
    ``message_id`` the message there (Slack: the conversation id and the message ``ts``);
    ``idempotency_key`` is the delivery's, so a repeated delivery finds what it posted."""

    pending_id: str
    route_id: str
    channel_kind: str
    channel_id: str
    message_id: str
    idempotency_key: str
    posted_at: datetime


class PostedMessages(Protocol):
    """Durable record of posted messages (contract: ``clarion.ports.testing.notifications``).

    ``record_posted`` is idempotent on (``channel_kind``, ``channel_id``, ``message_id``): it
    returns False and writes nothing for a message already recorded. ``posted_for`` lists one
    bundle's messages of one channel kind, oldest first; ``posted_by_key`` the messages one
    delivery posted.
    """

    def record_posted(self, message: PostedMessage) -> bool: ...

    def posted_for(self, pending_id: str, channel_kind: str) -> tuple[PostedMessage, ...]: ...

    def posted_by_key(self, idempotency_key: str) -> tuple[PostedMessage, ...]: ...


@attrs.frozen(kw_only=True)
class ChatUserLink:
    """A chat account (``provider`` "slack", its user id) linked to a Clarion user."""

    provider: str
    external_id: str
    user_id: str
    created_at: datetime


class ChatUserLinks(Protocol):
    """Which Clarion user a chat account answers as (contract:
    ``clarion.ports.testing.notifications``). One account links to at most one user (linking
    again replaces the user); a user may have several accounts."""

    def link_chat_user(self, provider: str, external_id: str, user_id: str) -> ChatUserLink: ...

    def unlink_chat_user(self, provider: str, external_id: str) -> bool:
        """False when the account was not linked."""
        ...

    def chat_user(self, provider: str, external_id: str) -> ChatUserLink | None: ...

    def chat_user_links(self, provider: str) -> tuple[ChatUserLink, ...]:
        """Every link of ``provider``, oldest first."""
        ...


class NotificationStore(
    NotificationRoutes, NotificationOutbox, PostedMessages, ChatUserLinks, Protocol
):
    """Routes, outbox, posted messages and chat-account links in one store (the storage unit
    ships them all)."""


__all__ = [
    "AnswerLinkIssuer",
    "ChatUserLink",
    "ChatUserLinks",
    "DeliveryOutcome",
    "DestinationCheck",
    "InPlaceNotifier",
    "Notification",
    "NotificationOutbox",
    "NotificationRoutes",
    "NotificationStore",
    "Notifier",
    "PostedMessage",
    "PostedMessages",
    "Sent",
]
