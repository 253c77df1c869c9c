"""The Apprise channel (extra ``clarion[apprise]``): notify-only messages to any service Apprise
supports (Teams, Discord, ntfy, …) — the route's target is an Apprise URL. The message is a
title and a short text with the inbox deep link; nobody answers there.

Apprise reports only success or failure, so a failure is retried (and given up after the
worker's maximum attempts); an Apprise URL it cannot parse is permanent.

Issue #29 S4: Apprise follows no redirects here (its ``http_redirects`` default is turned off;
only an administrator's URL may say ``redirect=yes``), and a route acting for someone who is not
an administrator is held at every send to the rule of
:func:`clarion.adapters.notify.destinations.apprise_problem` (hosted services only, no chosen
method, headers or redirects) — also a route stored before that rule existed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import structlog

from clarion.adapters.notify.body import subject
from clarion.adapters.notify.destinations import apprise_problem
from clarion.app.usecases.runner import Runner
from clarion.ports.notifications import DeliveryOutcome, Notification, Sent
from clarion.ports.threads import Offload

log = structlog.get_logger(__name__)
T = TypeVar("T")


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
    """:class:`clarion.ports.notifications.Notifier` through Apprise. ``offload`` runs the
    import and the send (:meth:`Offload.outbound`; a Runner of its own when None)."""

    def __init__(self, *, offload: Offload | None = None) -> None:
        self._offload = offload if offload is not None else Runner()

    async def deliver(self, notification: Notification) -> DeliveryOutcome:
        recipient = notification.recipient
        problem = apprise_problem(
            notification.route.channel.target,
            trusted=not recipient.is_scoped or recipient.is_admin,
        )
        if problem:
            return DeliveryOutcome(Sent.PERMANENT, problem)
        try:
            apprise = await self._offload.outbound(_quietly, _apprise)
        except RuntimeError as exc:
            return DeliveryOutcome(Sent.PERMANENT, str(exc))

        def send() -> bool | None:
            sender = apprise.Apprise(asset=apprise.AppriseAsset(http_redirects=False))
            if not sender.add(notification.route.channel.target):
                return None
            title, body = subject(notification), message_text(notification)
            return bool(sender.notify(title=title, body=body))

        # Abandoned (not waited for) when the worker's deadline passes: Apprise's own
        # timeouts end the thread.
        sent = await self._offload.outbound(_quietly, send)
        log.info("notification.apprise", pending_id=notification.pending_id, sent=sent)
        if sent is None:
            return DeliveryOutcome(Sent.PERMANENT, "not an Apprise URL Apprise can use")
        if not sent:
            return DeliveryOutcome(Sent.RETRY, "apprise failed")
        return DeliveryOutcome(Sent.SENT)


def _quietly(work: Callable[[], T]) -> T:
    """Run ``work`` with Apprise's own deprecation noise silenced: it loads its plugins lazily,
    and one of them imports the deprecated ``imghdr`` — its business, not our callers'."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return work()


__all__ = ["AppriseNotifier", "message_text"]
