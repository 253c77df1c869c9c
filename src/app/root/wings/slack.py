"""Slack (issue #18): ``POST /integrations/slack/interactions``, where Slack users answer,
when a signing secret is configured. The adapter is an optional extra, loaded only here."""

from __future__ import annotations

from typing import Any

from clarion.app.root.settings import Settings
from clarion.app.root.wings import Wing
from clarion.app.usecases.runner import Runner
from clarion.app.usecases.slack import SlackAnswering
from clarion.domain.errors import ValidationError


def slack_wing(settings: Settings, answering: SlackAnswering | None, runner: Runner) -> Wing:
    """The interactions route when ``CLARION_SLACK_SIGNING_SECRET`` is set (none otherwise),
    answering through ``answering`` (None: the storage keeps no notifications).

    Raises:
        ValidationError: no bot token to answer through, the storage keeps no notifications
            (nowhere to link Slack users), or the ``slack`` extra is missing.
    """
    if not settings.slack_signing_secret:
        return Wing()
    if not settings.slack_bot_token:
        raise ValidationError(
            "CLARION_SLACK_SIGNING_SECRET needs CLARION_SLACK_BOT_TOKEN too (the answers are "
            "sent back through Slack's Web API)",
            field="CLARION_SLACK_BOT_TOKEN",
        )
    if answering is None:
        raise ValidationError(
            "Slack interactions need a storage with notifications", field="slack_signing_secret"
        )
    slack = slack_adapter()
    api = slack.SlackApi(settings.slack_bot_token, api_url=settings.slack_api_url, offload=runner)
    interactions = slack.SlackInteractions(
        signing_secret=settings.slack_signing_secret, answering=answering, api=api
    )
    return Wing(routes=tuple(interactions.routes()))


def slack_adapter() -> Any:
    """The Slack adapter package.

    Raises:
        ValidationError: the ``slack`` extra is not installed.
    """
    try:
        import clarion.adapters.slack as slack
    except ImportError as exc:
        raise ValidationError(
            "Slack needs the extra: pip install 'clarion[slack]'", field="slack_bot_token"
        ) from exc
    return slack
