"""The Slack channel (issue #18): a route ``slack:#channel``, ``slack:C0123`` or ``slack:@U0123``
(a direct message from the app) gets one interactive message per asking notification
(answerable, reminder, escalation), and every message it posted for a bundle is updated in
place by the terminal events (resolved, expired, cancelled) with ``chat.update``.

Each posted message is recorded (:class:`clarion.ports.notifications.PostedMessages`) with the
delivery's idempotency key, so a delivery repeated after its message was recorded posts nothing
again. Slack's ``chat.postMessage`` takes no idempotency key, so a process that dies between
Slack's answer and the record may post a message twice (the documented at-least-once window);
both are updated when the bundle ends only if the second is recorded, which it then is.

Each delivery runs under the worker's deadline for the whole attempt (issue #29 S2: a Web API
call past it is abandoned and the delivery retried). The Web API base URL is the operator's
``CLARION_SLACK_API_URL``, not a user's choice, so it is not held to ``CLARION_OUTBOUND_ALLOW``.

Transient failures (transport, timeout, 429, 5xx) are retried by the worker; errors Slack names
(``channel_not_found``, ``not_in_channel``, ``invalid_auth``, …) are permanent. A terminal
update that finds its message gone (``message_not_found``, ``cant_update_message``,
``channel_not_found``) skips that message; the rest are still updated.
"""

from __future__ import annotations

from typing import Final

import structlog

from clarion.adapters.slack.api import SlackApi, SlackFailure
from clarion.adapters.slack.blocks import final_blocks, question_blocks, summary_text
from clarion.app.usecases.runner import Runner
from clarion.domain.notifications import ASKING_EVENTS, TERMINAL_EVENTS, slack_conversation
from clarion.ports.notifications import (
    DeliveryOutcome,
    Notification,
    PostedMessage,
    PostedMessages,
    Sent,
)
from clarion.ports.threads import Offload

log = structlog.get_logger(__name__)

KIND: Final = "slack"
GONE: Final = frozenset(
    {"message_not_found", "cant_update_message", "channel_not_found", "is_archived"}
)


class SlackNotifier:
    """:class:`clarion.ports.notifications.Notifier` for Slack (see the module)."""

    updates_in_place = True  # the worker re-applies a terminal update that raced a post

    def __init__(
        self, api: SlackApi, posted: PostedMessages, *, offload: Offload | None = None
    ) -> None:
        """``offload`` runs the ``posted`` store's calls: give it the composition's one Runner,
        so they count against the shared worker limiter (a Runner of its own when None)."""
        self._api = api
        self._posted = posted
        self._offload = offload if offload is not None else Runner()

    async def deliver(self, notification: Notification) -> DeliveryOutcome:
        try:
            if notification.event in TERMINAL_EVENTS:
                return await self._update(notification)
            if notification.event in ASKING_EVENTS:
                return await self._post(notification)
        except SlackFailure as exc:
            kind = Sent.RETRY if exc.retryable else Sent.PERMANENT
            return DeliveryOutcome(kind, f"slack: {exc.error}")
        return DeliveryOutcome(Sent.SENT, f"nothing to post for {notification.event}")

    async def _post(self, notification: Notification) -> DeliveryOutcome:
        key = notification.idempotency_key
        if await self._offload(self._posted.posted_by_key, key):
            return DeliveryOutcome(Sent.SENT, "already posted")
        blocks = question_blocks(
            event=notification.event,
            pending_id=notification.pending_id,
            context=notification.context,
            questions=notification.questions,
            link=notification.link,
        )
        text = summary_text(notification.event, notification.questions)
        target = slack_conversation(notification.route.channel.target)
        posted = await self._api.post_message(target, text, blocks)
        record = PostedMessage(
            pending_id=notification.pending_id,
            route_id=notification.route.id,
            channel_kind=KIND,
            channel_id=posted.channel,
            message_id=posted.ts,
            idempotency_key=key,
            posted_at=notification.occurred_at,
        )
        await self._offload(self._posted.record_posted, record)
        log.info("notification.slack_posted", pending_id=notification.pending_id)
        return DeliveryOutcome(Sent.SENT)

    async def _update(self, notification: Notification) -> DeliveryOutcome:
        messages = await self._offload(self._posted.posted_for, notification.pending_id, KIND)
        mine = [m for m in messages if m.route_id == notification.route.id]
        blocks = final_blocks(
            event=notification.event,
            context=notification.context,
            questions=notification.questions,
            link=notification.link,
            resolution=notification.resolution,
            resolved_by=notification.resolved_by,
        )
        text = summary_text(notification.event, notification.questions, notification.resolution)
        for message in mine:
            try:
                await self._api.update_message(message.channel_id, message.message_id, text, blocks)
            except SlackFailure as exc:
                if exc.retryable or exc.error not in GONE:
                    raise
                log.info("notification.slack_gone", pending_id=notification.pending_id)
        log.info(
            "notification.slack_updated", pending_id=notification.pending_id, messages=len(mine)
        )
        return DeliveryOutcome(Sent.SENT)


__all__ = ["SlackNotifier"]
