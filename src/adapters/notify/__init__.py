"""Notification channels (issue #17): webhook, e-mail (SMTP) and Apprise."""

from clarion.adapters.notify.apprise_channel import AppriseNotifier
from clarion.adapters.notify.body import BODY_VERSION, event_body
from clarion.adapters.notify.destinations import RouteDestinations
from clarion.adapters.notify.email import EmailNotifier, SmtpSettings, compose_message
from clarion.adapters.notify.webhook import WebhookNotifier

__all__ = [
    "BODY_VERSION",
    "AppriseNotifier",
    "EmailNotifier",
    "RouteDestinations",
    "SmtpSettings",
    "WebhookNotifier",
    "compose_message",
    "event_body",
]
