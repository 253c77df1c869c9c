"""Slack (issue #18, extra ``clarion[slack]``): the channel that posts interactive question
messages and updates them when the bundle ends, and the interactivity endpoint that answers
through the one resolver. docs/slack.md tells how to connect a workspace."""

from clarion.adapters.slack.api import DEFAULT_API_URL, SlackApi, SlackFailure
from clarion.adapters.slack.interactions import INTERACTIONS_PATH, ReplayGuard, SlackInteractions
from clarion.adapters.slack.notifier import SlackNotifier

__all__ = [
    "DEFAULT_API_URL",
    "INTERACTIONS_PATH",
    "ReplayGuard",
    "SlackApi",
    "SlackFailure",
    "SlackInteractions",
    "SlackNotifier",
]
