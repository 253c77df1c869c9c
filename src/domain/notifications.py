"""Notification routing and the outbox, as pure values (issue #17).

A *route* says which channel (``email:…``, ``webhook:…``, ``apprise:…``, ``slack:…``) hears
about which events of one workspace's bundles ("" = the default route, for workspace-less
tasks), on whose behalf (``user_id``: only what that identity may see is ever sent), and its
policy: remind every ``remind_after_s``, escalate to another route after
``escalate_after_s``, and a deadline after ``deadline_after_s`` with ``on_deadline`` ``keep`` |
``expire`` | ``default:<option id>``.

An *outbox entry* is one unit of durable work with a due time: an event recorded with the change
that caused it (``route_id`` "" — fanned out to the routes when it is due), a delivery to one
route, a reminder, an escalation, or a deadline. Its ``idempotency_key`` is stable across
retries and is what a receiver de-duplicates on.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Final
from urllib.parse import urlsplit

import attrs

from clarion.domain.errors import ValidationError

# Events recorded atomically with the change that causes them.
ANSWERABLE: Final = "answerable"
RESOLVED: Final = "resolved"
EXPIRED_EVENT: Final = "expired"
CANCELLED_EVENT: Final = "cancelled"
# Issue #30: a newer turn closed the bundle without an answer (recorded with the turn: its
# rows are not written, facts §4.4).
SUPERSEDED_EVENT: Final = "superseded"
# Scheduled work, created when an ``answerable`` event fans out.
REMINDER: Final = "reminder"
ESCALATION: Final = "escalation"
DEADLINE: Final = "deadline"

RECORDED_EVENTS: Final = (ANSWERABLE, RESOLVED, EXPIRED_EVENT, CANCELLED_EVENT, SUPERSEDED_EVENT)
ROUTE_EVENTS: Final = (
    ANSWERABLE,
    REMINDER,
    ESCALATION,
    RESOLVED,
    EXPIRED_EVENT,
    CANCELLED_EVENT,
    SUPERSEDED_EVENT,
)
# Events that ask a person to act: dropped once the bundle is no longer answerable.
ASKING_EVENTS: Final = frozenset({ANSWERABLE, REMINDER, ESCALATION})

CHANNEL_KINDS: Final = ("email", "webhook", "apprise", "slack")
# Events after which a bundle is settled: a channel that posted messages updates them in place.
TERMINAL_EVENTS: Final = frozenset({RESOLVED, EXPIRED_EVENT, CANCELLED_EVENT, SUPERSEDED_EVENT})
ON_DEADLINE_KEEP: Final = "keep"
ON_DEADLINE_EXPIRE: Final = "expire"
DEFAULT_PREFIX: Final = "default:"

# Outbox entry states.
DUE: Final = "due"
DONE: Final = "done"
DROPPED: Final = "dropped"
FAILED: Final = "failed"


@attrs.frozen
class Channel:
    """Where a route delivers: ``kind`` is one of :data:`CHANNEL_KINDS`; ``target`` the
    address, URL, Apprise URL or Slack conversation (``#name``, a channel id ``C…``/``G…``,
    or ``@U…`` for a direct message to that user)."""

    kind: str
    target: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}"


def parse_channel(text: str) -> Channel:
    """``email:alice@example.com``, ``webhook:https://…``, ``apprise:<apprise url>`` or
    ``slack:#channel`` / ``slack:C0123`` / ``slack:@U0123`` (issue #18).

    Raises:
        ValidationError: an unknown kind, or a target that does not fit it (``field``
            "channel").
    """
    kind, _, target = text.strip().partition(":")
    kind, target = kind.strip().lower(), target.strip()
    if kind not in CHANNEL_KINDS or not target:
        raise ValidationError(
            "channel must be email:ADDRESS, webhook:URL, apprise:URL or slack:#CHANNEL",
            field="channel",
        )
    if kind == "email":
        local, at, domain = target.rpartition("@")
        if not at or not local or "." not in domain or any(c.isspace() for c in target):
            raise ValidationError(f"not an e-mail address: {target!r}", field="channel")
    if kind == "webhook":
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError("a webhook channel needs an http(s) URL", field="channel")
    if kind == "slack" and not _SLACK_TARGET.fullmatch(target):
        raise ValidationError(
            "a slack channel is slack:#channel-name, slack:C0123 (a channel id) or "
            f"slack:@U0123 (a direct message to that user), got {target!r}",
            field="channel",
        )
    return Channel(kind=kind, target=target)


# ``#name`` (Slack's channel-name rules: lower case, digits, ``-``, ``_``, ``.``, up to 80),
# a conversation id (``C``/``G``/``D`` + upper-case letters and digits), or ``@`` + a user id.
_SLACK_TARGET: Final = re.compile(
    r"#[a-z0-9][a-z0-9._\-]{0,79}|[CGD][A-Z0-9]{2,}|@[UW][A-Z0-9]{2,}"
)


def slack_conversation(target: str) -> str:
    """What ``chat.postMessage`` takes as ``channel`` for a slack target: a ``#name``
    or conversation id as it is, a user id (``@U…``) without its ``@`` (the app's direct
    message with that user)."""
    return target[1:] if target.startswith("@") else target


def parse_on_deadline(text: str) -> str:
    """``keep``, ``expire`` or ``default:<option id>``, normalized.

    Raises:
        ValidationError: anything else (``field`` "on_deadline").
    """
    value = text.strip()
    if value in (ON_DEADLINE_KEEP, ON_DEADLINE_EXPIRE):
        return value
    if value.startswith(DEFAULT_PREFIX) and value[len(DEFAULT_PREFIX) :].strip():
        return DEFAULT_PREFIX + value[len(DEFAULT_PREFIX) :].strip()
    raise ValidationError(
        "on_deadline must be keep, expire or default:<option id>", field="on_deadline"
    )


def parse_events(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The route's events, in :data:`ROUTE_EVENTS` order; empty means every event.

    Raises:
        ValidationError: an unknown event name (``field`` "events").
    """
    wanted = {name.strip() for name in names if name.strip()}
    unknown = sorted(wanted - set(ROUTE_EVENTS))
    if unknown:
        raise ValidationError(
            f"unknown event {unknown[0]!r}; events are {', '.join(ROUTE_EVENTS)}", field="events"
        )
    return tuple(event for event in ROUTE_EVENTS if not wanted or event in wanted)


def _positive(value: float | None, field: str) -> None:
    if value is not None and not value > 0:
        raise ValidationError(f"{field} must be a positive number of seconds", field=field)


@attrs.frozen(kw_only=True)
class RouteSpec:
    """What a caller asks for when adding a route (validated by :func:`check_route_spec`)."""

    workspace_id: str
    channel: Channel
    user_id: str = ""  # on whose behalf; "" = unscoped (an operator's route)
    events: tuple[str, ...] = ROUTE_EVENTS
    remind_after_s: float | None = None
    escalate_after_s: float | None = None
    escalate_to: str = ""  # route id
    deadline_after_s: float | None = None
    on_deadline: str = ON_DEADLINE_KEEP
    include_answers: bool = False
    # A webhook route's own signing secret (issue #29): set when the route is created, shown
    # to whoever manages the route; "" for the other channels.
    secret: str = attrs.field(default="", repr=False)


def check_route_spec(spec: RouteSpec) -> RouteSpec:
    """The spec, normalized.

    Raises:
        ValidationError: a non-positive duration, an escalation without both its duration and
            its target route, or an ``on_deadline`` other than ``keep`` without a deadline.
    """
    _positive(spec.remind_after_s, "remind_after_s")
    _positive(spec.escalate_after_s, "escalate_after_s")
    _positive(spec.deadline_after_s, "deadline_after_s")
    if (spec.escalate_after_s is None) != (not spec.escalate_to):
        raise ValidationError(
            "an escalation needs both escalate_after_s and escalate_to", field="escalate_to"
        )
    on_deadline = parse_on_deadline(spec.on_deadline)
    if spec.deadline_after_s is None and on_deadline != ON_DEADLINE_KEEP:
        raise ValidationError("on_deadline needs deadline_after_s", field="on_deadline")
    return attrs.evolve(spec, on_deadline=on_deadline, events=parse_events(list(spec.events)))


@attrs.frozen(kw_only=True)
class Route(RouteSpec):
    """A stored route: its spec plus ``id``, who created it and when."""

    id: str
    created_by: str
    created_at: datetime

    def hears(self, event: str) -> bool:
        return event in self.events


@attrs.frozen(kw_only=True)
class NewEntry:
    """Outbox work to record: ``route_id`` "" for an event still to fan out."""

    pending_id: str
    event: str
    due_at: datetime
    idempotency_key: str
    route_id: str = ""
    sequence: int = 0  # the reminder's number (1, 2, …); 0 otherwise
    # The idempotency key of the recorded event this entry follows from (the event that fanned
    # out to it, or — for a terminal update — the resolution it announces); "" for an event.
    origin_key: str = ""


@attrs.frozen(kw_only=True)
class OutboxEntry(NewEntry):
    """A stored outbox entry. ``lease_token`` is set on an entry handed out by
    ``claim_due``; only its holder may finish or retry it."""

    id: str
    status: str
    attempts: int
    created_at: datetime
    lease_token: str = ""
    last_error: str = ""


def event_key(event: str, pending_id: str, at: datetime) -> str:
    """The idempotency key of a recorded event: one per occurrence, whoever records it and
    however often. A bundle becomes answerable, expires, is cancelled or superseded at most
    once; it is
    resolved once per winning claim, told apart by the claim's own time ``at`` (fixed-width and
    without colons). The entries following from an event carry its key as their
    ``origin_key``, and their own keys begin with it."""
    if event != RESOLVED:
        return f"{event}:{pending_id}"
    return f"{event}:{pending_id}:{at.astimezone(UTC):%Y%m%dT%H%M%S.%fZ}"


def event_entry(entry_id: str, pending_id: str, event: str, at: datetime) -> OutboxEntry:
    """The entry for ``event`` on ``pending_id``, caused by a transition at ``at`` (due then)."""
    return OutboxEntry(
        id=entry_id,
        pending_id=pending_id,
        event=event,
        due_at=at,
        idempotency_key=event_key(event, pending_id, at),
        status=DUE,
        attempts=0,
        created_at=at,
    )


def backoff(attempts: int, base_s: float, cap_s: float) -> timedelta:
    """Exponential backoff before attempt ``attempts + 1``: base·2^(attempts−1), capped."""
    exponent = max(attempts - 1, 0)
    return timedelta(seconds=min(cap_s, base_s * (2 ** min(exponent, 30))))


def deep_link(public_url: str, pending_id: str) -> str:
    """The inbox URL that opens and focuses ``pending_id``."""
    return f"{public_url.rstrip('/')}/#{pending_id}"


__all__ = [
    "ANSWERABLE",
    "ASKING_EVENTS",
    "CANCELLED_EVENT",
    "CHANNEL_KINDS",
    "DEADLINE",
    "DONE",
    "DROPPED",
    "DUE",
    "ESCALATION",
    "EXPIRED_EVENT",
    "FAILED",
    "RECORDED_EVENTS",
    "REMINDER",
    "RESOLVED",
    "ROUTE_EVENTS",
    "SUPERSEDED_EVENT",
    "TERMINAL_EVENTS",
    "Channel",
    "NewEntry",
    "OutboxEntry",
    "Route",
    "RouteSpec",
    "backoff",
    "check_route_spec",
    "deep_link",
    "event_entry",
    "event_key",
    "parse_channel",
    "parse_events",
    "parse_on_deadline",
    "slack_conversation",
]
