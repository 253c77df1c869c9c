"""The Apprise channel (extra ``clarion[apprise]``): notify-only messages to any service Apprise
supports (Teams, Discord, ntfy, …) — the route's target is an Apprise URL. The message is a
title and a short text with the inbox deep link; nobody answers there.

Apprise reports only success or failure, so a failure is retried (and given up after the
worker's maximum attempts); an Apprise URL it cannot parse is permanent.
"""

from __future__ import annotations

from typing import Any

import anyio
import structlog

from clarion.adapters.notify.body import subject
from clarion.ports.notifications import DeliveryOutcome, Notification, Sent

log = structlog.get_logger(__name__)


def _apprise() -> Any:
    """The apprise module.

    Raises:
        RuntimeError: the extra is not installed.
    """
    try:
        import apprise
    except ImportError as exc:
        raise RuntimeError("apprise routes need the extra: pip install 'clarion[apprise]'") from exc
    return apprise


def message_text(notification: Notification) -> str:
    lines = [q.prompt or q.title or q.id for q in notification.questions]
    return "\n".join([*lines, notification.link])


class AppriseNotifier:
    """:class:`clarion.ports.notifications.Notifier` through Apprise."""

    async def deliver(self, notification: Notification) -> DeliveryOutcome:
        try:
            apprise = _apprise()
        except RuntimeError as exc:
            return DeliveryOutcome(Sent.PERMANENT, str(exc))
        sender = apprise.Apprise()
        if not sender.add(notification.route.channel.target):
            return DeliveryOutcome(Sent.PERMANENT, "not an Apprise URL Apprise can use")
        sent = await anyio.to_thread.run_sync(
            lambda: bool(
                sender.notify(title=subject(notification), body=message_text(notification))
            )
        )
        log.info("notification.apprise", pending_id=notification.pending_id, sent=sent)
        return DeliveryOutcome(Sent.SENT) if sent else DeliveryOutcome(Sent.RETRY, "apprise failed")


__all__ = ["AppriseNotifier", "message_text"]
