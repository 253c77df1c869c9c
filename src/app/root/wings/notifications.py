"""Notifications: the channels the settings configure, the worker that delivers the outbox
(a background task while serving) and the management of routes (REST and ``clarion
notify``)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

import attrs

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
from clarion.app.usecases.runner import Runner
from clarion.app.usecases.services import Services
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.notifications import (
    AnswerLinkIssuer,
    NotificationStore,
    Notifier,
    PostedMessages,
)
from clarion.ports.threads import Offload

# The channel kinds that need a setting to deliver, and the setting (docs/notifications.md).
CHANNEL_SETTINGS: Final = {"email": "CLARION_SMTP_HOST", "slack": "CLARION_SLACK_BOT_TOKEN"}


@attrs.frozen
class Notifications:
    """The worker and route management (None: the storage keeps no outbox) and their wing."""

    worker: NotificationWorker | None
    routing: NotificationRouting | None
    wing: Wing


def notifications(
    settings: Settings,
    storage: Storage,
    services: Services,
    claims: ClaimRepository,
    authorizer: TaskAuthorizer,
    runner: Runner,
    notifiers: dict[str, Notifier] | None,
    answer_links: AnswerLinkIssuer,
) -> Notifications:
    """The worker delivering ``storage``'s outbox while serving, through ``notifiers`` (None:
    the channels the settings configure, e-mail carrying ``answer_links``)."""
    channels = (
        notifiers
        if notifiers is not None
        else default_notifiers(settings, answer_links, storage.notifications, runner)
    )
    store = storage.notifications
    if store is None:
        return Notifications(None, None, Wing())
    worker = NotificationWorker(
        store=store,
        claims=claims,
        host=storage.host,
        authorizer=authorizer,
        users=storage.tokens,
        notifiers=channels,
        expire=services.lifecycle.expire_bundle,
        answer=services.resolver.resolve,
        clock=services.clock,
        runner=runner,
        metrics=services.metrics,
        public_url=settings.base_url,
        groups_of=storage.groups.groups_of if storage.groups is not None else None,
        policy=DeliveryPolicy(
            max_attempts=settings.notify_max_attempts,
            poll_interval_s=settings.notify_poll_s,
            delivery_timeout_s=settings.notify_timeout_s,
            concurrency=settings.notify_concurrency,
        ),
    )
    routing = route_management(settings, storage, store, runner, channels.keys())
    return Notifications(worker, routing, Wing(tasks=(worker.run_forever,)))


def route_management(
    settings: Settings,
    storage: Storage,
    store: NotificationStore,
    runner: Runner,
    channels: Collection[str],
) -> NotificationRouting:
    """Route management over ``store``; a route on a channel not in ``channels`` is refused
    unless forced, naming the setting it needs."""
    return NotificationRouting(
        store=store,
        host=storage.host,
        users=storage.tokens,
        runner=runner,
        email_needs_user=settings.auth_enabled,
        destinations=RouteDestinations(outbound_policy(settings)),
        unconfigured=unconfigured_channels(channels),
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


def unconfigured_channels(available: Collection[str]) -> dict[str, str]:
    """Each channel kind that needs a setting and is not in ``available``, with the setting."""
    return {kind: name for kind, name in CHANNEL_SETTINGS.items() if kind not in available}


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
