"""The Slack Web API as Clarion uses it: ``slack_sdk``'s synchronous ``WebClient`` on a worker
thread (the Runner's outbound pool: its ``AsyncWebClient`` needs ``aiohttp``, which Clarion
does not ship), and ``response_url`` posts through its ``WebhookClient``.

Every call returns or raises :class:`SlackFailure`, which says whether trying again may help:
a transport error, a timeout, HTTP 429 (``ratelimited``) or a 5xx may pass; any other error
Slack names (``channel_not_found``, ``not_in_channel``, ``invalid_auth``, …) will not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

import attrs
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View
from slack_sdk.webhook import WebhookClient

from clarion.adapters.slack.blocks import as_dicts
from clarion.app.usecases.runner import Runner
from clarion.ports.threads import Offload

DEFAULT_API_URL: Final = "https://slack.com/api/"
T = TypeVar("T")


class SlackFailure(Exception):
    """A Slack call failed; ``retryable`` when trying again later may succeed."""

    def __init__(self, error: str, *, retryable: bool) -> None:
        super().__init__(error)
        self.error = error
        self.retryable = retryable


@attrs.frozen
class Posted:
    channel: str  # the conversation id Slack answered with (C…, G…, D…)
    ts: str


def _failure(exc: Exception) -> SlackFailure:
    if isinstance(exc, SlackApiError):
        status = exc.response.status_code
        error = str(exc.response.get("error", "") or f"HTTP {status}")
        return SlackFailure(error, retryable=status == 429 or status >= 500)
    return SlackFailure(f"Slack unreachable: {type(exc).__name__}", retryable=True)


class SlackApi:
    """The calls Clarion makes, each on a worker thread; ``api_url`` is the Web API's base
    (``https://slack.com/api/``; tests point it at a local fake)."""

    def __init__(
        self,
        token: str,
        *,
        api_url: str = DEFAULT_API_URL,
        timeout: int = 10,
        offload: Offload | None = None,
    ) -> None:
        """``offload`` runs the calls (:meth:`Offload.outbound`; a Runner of its own when None)."""
        base = api_url if api_url.endswith("/") else api_url + "/"
        self._client = WebClient(token=token, base_url=base, timeout=timeout)
        self._timeout = timeout
        self._offload = offload if offload is not None else Runner()

    async def _call(self, work: Callable[[], T]) -> T:
        try:
            # Abandoned (not waited for) when the caller's deadline passes — the notification
            # worker's per-delivery deadline (issue #29 S2); the client's timeout ends it.
            return await self._offload.outbound(work)
        except (SlackClientError, OSError) as exc:
            raise _failure(exc) from exc

    async def post_message(self, channel: str, text: str, blocks: Sequence[Block]) -> Posted:
        response = await self._call(
            lambda: self._client.chat_postMessage(
                channel=channel, text=text, blocks=as_dicts(blocks), unfurl_links=False
            )
        )
        return Posted(channel=str(response["channel"]), ts=str(response["ts"]))

    async def update_message(
        self, channel: str, ts: str, text: str, blocks: Sequence[Block]
    ) -> None:
        await self._call(
            lambda: self._client.chat_update(
                channel=channel, ts=ts, text=text, blocks=as_dicts(blocks)
            )
        )

    async def open_view(self, trigger_id: str, view: View) -> None:
        await self._call(lambda: self._client.views_open(trigger_id=trigger_id, view=view))

    async def post_ephemeral(self, channel: str, user: str, text: str) -> None:
        await self._call(
            lambda: self._client.chat_postEphemeral(channel=channel, user=user, text=text)
        )

    async def respond(self, response_url: str, body: dict[str, Any]) -> None:
        """POST ``body`` to an interaction's ``response_url``."""

        def send() -> None:
            response = WebhookClient(response_url, timeout=self._timeout).send_dict(body)
            if response.status_code >= 400:
                raise SlackFailure(
                    f"response_url answered {response.status_code}",
                    retryable=response.status_code >= 500,
                )

        await self._call(send)


__all__ = ["DEFAULT_API_URL", "Posted", "SlackApi", "SlackFailure"]
