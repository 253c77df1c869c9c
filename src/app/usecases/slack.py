"""Answering from Slack (issue #18): who a Slack user is in Clarion, and their answer through
the one resolver, recorded as the Slack surface.

A Slack account answers as the Clarion user it is linked to (``clarion users link-slack USER
SLACK_USER_ID``), as that user is now (active, with their current admin flag); with
authentication disabled everyone is the synthetic identity, as on every other surface. An
unlinked account, a deactivated user and a user who may not see the bundle's task are refused
without a word about whether the bundle exists (like a foreign id, A1/A3). The answer itself
goes through :meth:`clarion.app.usecases.resolve.Resolver.resolve` with ``surface=SLACK``: the
winner is told it answered, a loser gets the winner's answer (R2), an outcome that does not fit
gets the validation message (N6–N8b) — nothing here decides who wins.
"""

from __future__ import annotations

import enum
from typing import Final

import attrs
import structlog

from clarion.app.usecases.resolve import Resolver
from clarion.app.usecases.runner import Runner
from clarion.domain.errors import (
    ClaimError,
    DeliveryError,
    InvalidOutcome,
    NotActive,
    NotFound,
    ValidationError,
)
from clarion.domain.model import Identity, Outcome, Question, Resolution
from clarion.domain.outcome import validate_outcome
from clarion.domain.replay import replay_winner
from clarion.domain.resolved_by import ResolvedBy, Surface
from clarion.domain.rows import Bundle
from clarion.ports.notifications import ChatUserLink, ChatUserLinks
from clarion.ports.tokens import UserDirectory

log = structlog.get_logger(__name__)

PROVIDER: Final = "slack"
LINK_FAILED: Final = "failed to read the Slack account's link"
NOTHING_CHOSEN: Final = "Choose an option or write an answer first, or skip the questions."


class SlackState(enum.StrEnum):
    """What became of a Slack user's attempt."""

    OPEN = "open"  # the bundle is answerable by this user (``bundle`` set)
    WON = "won"  # this answer was recorded (``resolution`` set)
    LOST = "lost"  # someone answered first (``resolution``: the winner's; ``resolved_by``)
    INVALID = "invalid"  # the outcome does not fit (``message``, ``field``)
    UNLINKED = "unlinked"  # the Slack account answers as nobody in Clarion
    UNAVAILABLE = "unavailable"  # no such bundle, or not visible to this user
    CLOSED = "closed"  # the bundle ended without an answer (expired, cancelled, moved on)
    FAILED = "failed"  # the store failed; nothing was recorded unless ``message`` says so


def is_slack_user_id(value: str) -> bool:
    """Whether ``value`` looks like a Slack member id (``U0123ABCD``, or ``W…`` on Enterprise
    Grid): that letter, then upper-case letters and digits."""
    return value[:1] in ("U", "W") and len(value) > 2 and value.isalnum() and value.isupper()


@attrs.frozen
class SlackLinks:
    """Slack accounts linked to Clarion users (``clarion users link-slack|unlink-slack|
    slack-links``): who a Slack account answers as."""

    store: ChatUserLinks
    users: UserDirectory

    def link(self, user_id: str, slack_user_id: str) -> ChatUserLink:
        """Link ``slack_user_id`` to ``user_id`` (replacing any user it was linked to).

        Raises:
            ValidationError: not a Slack user id, or no active user ``user_id``.
        """
        slack_user_id = slack_user_id.strip()
        if not is_slack_user_id(slack_user_id):
            raise ValidationError(
                f"not a Slack user id: {slack_user_id!r} (like U0123ABCD; in Slack: "
                "the person's profile → ⋮ → Copy member ID)",
                field="slack_user_id",
            )
        user = self.users.get_user(user_id)
        if user is None or not user.active:
            raise ValidationError(f"no active user {user_id!r}", field="user_id")
        return self.store.link_chat_user(PROVIDER, slack_user_id, user.id)

    def unlink(self, slack_user_id: str) -> bool:
        return self.store.unlink_chat_user(PROVIDER, slack_user_id.strip())

    def links(self) -> tuple[ChatUserLink, ...]:
        return self.store.chat_user_links(PROVIDER)


@attrs.frozen
class SlackResult:
    state: SlackState
    identity: Identity | None = None
    bundle: Bundle | None = None
    resolution: Resolution | None = None
    resolved_by: ResolvedBy | None = None
    message: str = ""
    field: str = ""

    @property
    def questions(self) -> tuple[Question, ...]:
        return self.bundle.questions if self.bundle is not None else ()


@attrs.define(kw_only=True)
class SlackAnswering:
    """See the module docstring."""

    _resolver: Resolver = attrs.field(alias="resolver")
    _links: ChatUserLinks = attrs.field(alias="links")
    _users: UserDirectory = attrs.field(alias="users")
    _run: Runner = attrs.field(alias="runner")
    _auth_enabled: bool = attrs.field(alias="auth_enabled")

    async def identity(self, slack_user_id: str) -> Identity | None:
        """The Clarion identity a Slack user answers as; None when there is none.

        Raises:
            ClaimError: the store failed.
        """
        if not self._auth_enabled:
            return Identity.synthetic_admin()
        if not slack_user_id:
            return None
        link = await self._run.guarded(LINK_FAILED, self._links.chat_user, PROVIDER, slack_user_id)
        if link is None:
            return None
        user = await self._run.guarded(LINK_FAILED, self._users.get_user, link.user_id)
        if user is None or not user.active:
            return None
        return Identity.user(user.id, is_admin=user.is_admin, display_name=user.name)

    async def open(self, slack_user_id: str, pending_id: str) -> SlackResult:
        """Whether ``slack_user_id`` may answer ``pending_id`` now: OPEN with the bundle, or
        why not (LOST with the winner when it was answered)."""
        try:
            identity = await self.identity(slack_user_id)
            if identity is None:
                return SlackResult(SlackState.UNLINKED)
            bundle = await self._resolver.authorize_bundle(identity, pending_id)
        except NotFound:
            return SlackResult(SlackState.UNAVAILABLE)
        except ClaimError as exc:
            return SlackResult(SlackState.FAILED, message=str(exc))
        winner = replay_winner(bundle.pending_id, bundle.rows)
        if winner is not None:
            return SlackResult(
                SlackState.LOST,
                identity=identity,
                bundle=bundle,
                resolution=winner,
                resolved_by=_resolver_of(bundle),
            )
        return SlackResult(SlackState.OPEN, identity=identity, bundle=bundle)

    async def check(self, slack_user_id: str, pending_id: str, outcome: Outcome) -> SlackResult:
        """:meth:`open`, then the outcome validated against the bundle (INVALID with the
        message and the field it names) — also when it was already answered, as the resolver
        does (R2c); nothing is written."""
        opened = await self.open(slack_user_id, pending_id)
        if opened.state not in (SlackState.OPEN, SlackState.LOST) or opened.bundle is None:
            return opened
        if not outcome.rejected and not any(
            a.selected_options or a.custom_text.strip() for a in outcome.answers
        ):
            return attrs.evolve(opened, state=SlackState.INVALID, message=NOTHING_CHOSEN)
        try:
            validate_outcome(opened.bundle.questions, outcome)
        except InvalidOutcome as exc:
            return attrs.evolve(
                opened, state=SlackState.INVALID, message=str(exc), field=exc.field or ""
            )
        return opened

    async def answer(self, slack_user_id: str, pending_id: str, outcome: Outcome) -> SlackResult:
        """Answer (or reject) ``pending_id`` as the Slack user, through the one resolver."""
        checked = await self.check(slack_user_id, pending_id, outcome)
        if checked.state is SlackState.LOST:
            log.info("slack.answered", pending_id=pending_id, claimed=False)
            return checked
        if checked.state is not SlackState.OPEN or checked.identity is None:
            return checked
        try:
            resolution = await self._resolver.resolve(
                checked.identity, pending_id, outcome, surface=Surface.SLACK
            )
        except InvalidOutcome as exc:
            return attrs.evolve(
                checked, state=SlackState.INVALID, message=str(exc), field=exc.field or ""
            )
        except NotFound:
            return SlackResult(SlackState.UNAVAILABLE)
        except NotActive:
            return attrs.evolve(checked, state=SlackState.CLOSED)
        except (DeliveryError, ClaimError) as exc:
            return attrs.evolve(checked, state=SlackState.FAILED, message=str(exc))
        log.info("slack.answered", pending_id=pending_id, claimed=resolution.claimed)
        if resolution.claimed:
            return attrs.evolve(checked, state=SlackState.WON, resolution=resolution)
        resolved_by = None
        try:
            bundle = await self._resolver.authorize_bundle(checked.identity, pending_id)
            resolved_by = _resolver_of(bundle)
        except (NotFound, ClaimError):
            pass  # the winner's answer is still reported, without who gave it
        return attrs.evolve(
            checked, state=SlackState.LOST, resolution=resolution, resolved_by=resolved_by
        )


def _resolver_of(bundle: Bundle) -> ResolvedBy | None:
    return next((row.resolved_by for row in bundle.rows if row.resolved_by is not None), None)


__all__ = ["PROVIDER", "SlackAnswering", "SlackResult", "SlackState"]
