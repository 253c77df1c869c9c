"""Notifications: the channels the settings configure and the outbox they deliver (the ports
of the worker and of route management, built with every use case by
:func:`~clarion.app.usecases.services.build_services`), and the worker as a background task
while serving."""

from __future__ import annotations

from typing import Final

from clarion.adapters.notify import (
    AppriseNotifier,
    EmailNotifier,
    RouteDestinations,
    SmtpSettings,
    WebhookNotifier,
)
from clarion.app.root.settings import Settings
from clarion.app.root.storage import Storage
from clarion.app.root.wings import Wing
from clarion.app.root.wings.delivery import outbound_policy
from clarion.app.root.wings.slack import slack_adapter
from clarion.app.usecases.notification_routes import NotificationRouting
from clarion.app.usecases.notifications import DeliveryPolicy, NotificationWorker
from clarion.app.usecases.people_services import NotificationPorts, build_routing
from clarion.app.usecases.runner import Runner
from clarion.ports.notifications import (
    AnswerLinkIssuer,
    Notifier,
    PostedMessages,
)
from clarion.ports.threads import Offload

# The channel kinds that need a setting to deliver, and the setting (docs/notifications.md).
CHANNEL_SETTINGS: Final = {"email": "CLARION_SMTP_HOST", "slack": "CLARION_SLACK_BOT_TOKEN"}


def notification_ports(
    settings: Settings,
    storage: Storage,
    runner: Runner,
    notifiers: dict[str, Notifier] | None,
) -> NotificationPorts | None:
    """The outbox of ``storage`` and the channels it is delivered through: ``notifiers``, else
    those the settings configure (e-mail carrying the answer links). None: the storage keeps
    no outbox."""
    store = storage.notifications
    if store is None:
        return None

    def channels(answer_links: AnswerLinkIssuer) -> dict[str, Notifier]:
        if notifiers is not None:
            return notifiers
        return default_notifiers(settings, answer_links, store, runner)

    return NotificationPorts(
        store=store,
        notifiers=channels,
        destinations=RouteDestinations(outbound_policy(settings)),
        channel_settings=CHANNEL_SETTINGS,
        groups_of=storage.groups.groups_of if storage.groups is not None else None,
        policy=DeliveryPolicy(
            max_attempts=settings.notify_max_attempts,
            poll_interval_s=settings.notify_poll_s,
            delivery_timeout_s=settings.notify_timeout_s,
            concurrency=settings.notify_concurrency,
        ),
        public_url=settings.base_url,
    )


def notifications_wing(worker: NotificationWorker | None) -> Wing:
    """The worker delivering the outbox while serving (nothing without an outbox)."""
    return Wing(tasks=(worker.run_forever,)) if worker is not None else Wing()


def route_management(settings: Settings, storage: Storage, runner: Runner) -> NotificationRouting:
    """Route management for ``clarion notify``: a route on a channel the settings do not
    configure is refused unless forced, naming the setting it needs.

    Raises:
        ValueError: the storage keeps no outbox (a host's own; the settings never name one).
    """
    ports = notification_ports(settings, storage, runner, None)
    if ports is None:
        raise ValueError("clarion notify needs a storage with notifications")
    return build_routing(
        ports,
        storage.host,
        storage.tokens,
        runner,
        email_needs_user=settings.auth_enabled,
        channels=configured_channels(settings),
    )


def configured_channels(settings: Settings) -> frozenset[str]:
    """The channel kinds :func:`default_notifiers` gives ``settings`` (Slack's needs the
    notification store too, which every storage but a host's own has)."""
    kinds = {"webhook", "apprise"}
    if settings.smtp_host:
        kinds.add("email")
    if settings.slack_bot_token:
        kinds.add("slack")
    return frozenset(kinds)


def default_notifiers(
    settings: Settings,
    answer_links: AnswerLinkIssuer | None = None,
    posted: PostedMessages | None = None,
    offload: Offload | None = None,
) -> dict[str, Notifier]:
    """The channels ``settings`` configure: webhook and Apprise always, e-mail with an SMTP
    host (its answer links from ``answer_links``, else the inbox deep link), Slack with a bot
    token and a store to record its messages in (``posted``); Apprise and Slack offload
    through ``offload`` (the one Runner). The webhook signs with the
    server-wide secret when one is set, else with each route's own; it reaches internal
    addresses only as ``CLARION_OUTBOUND_ALLOW`` allows."""
    secret = settings.notify_webhook_secret or settings.resume_webhook_secret
    notifiers: dict[str, Notifier] = {
        "webhook": WebhookNotifier(
            secret=secret, timeout=settings.notify_timeout_s, policy=outbound_policy(settings)
        ),
        "apprise": AppriseNotifier(offload=offload),
    }
    if settings.smtp_host:
        smtp = SmtpSettings(
            host=settings.smtp_host,
            port=settings.smtp_port,
            security=settings.smtp_security,
            username=settings.smtp_username,
            password=settings.smtp_password,
            sender=settings.smtp_from,
        )
        notifiers["email"] = EmailNotifier(smtp, links=answer_links)
    if settings.slack_bot_token and posted is not None:
        slack = slack_adapter()
        api = slack.SlackApi(
            settings.slack_bot_token, api_url=settings.slack_api_url, offload=offload
        )
        notifiers["slack"] = slack.SlackNotifier(api, posted, offload=offload)
    return notifiers
