"""The webhook channel: a JSON POST of the versioned event body (:mod:`.body`), signed like the
resume webhook (``Clarion-Timestamp`` and ``Clarion-Signature``, :mod:`clarion.domain.signing`)
and carrying ``Idempotency-Key`` — the same on every retry of one notification — and
``Clarion-Event``.

A 2xx is sent; 408, 425, 429, any 5xx, a transport error or the timeout are retried; any other
status is permanent (the receiver refuses it and will keep refusing).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx2
import structlog

from clarion.adapters.notify.body import event_body
from clarion.domain.signing import sign
from clarion.ports.notifications import DeliveryOutcome, Notification, Sent

log = structlog.get_logger(__name__)

KEY_HEADER = "Idempotency-Key"
EVENT_HEADER = "Clarion-Event"
TIMESTAMP_HEADER = "Clarion-Timestamp"
SIGNATURE_HEADER = "Clarion-Signature"
RETRYABLE_STATUSES = frozenset({408, 425, 429})


class WebhookNotifier:
    """:class:`clarion.ports.notifications.Notifier` over HTTP; the URL is the route's target.

    ``client`` may be injected (tests, connection reuse); it is then the caller's to close.
    """

    def __init__(
        self,
        *,
        secret: str = "",
        timeout: float = 10.0,
        client: httpx2.AsyncClient | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret
        self._timeout = timeout
        self._client = client
        self._now = now

    def headers_for(self, notification: Notification, body: bytes) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            KEY_HEADER: notification.idempotency_key,
            EVENT_HEADER: notification.event,
        }
        if self._secret:
            timestamp = str(int(self._now()))
            headers[TIMESTAMP_HEADER] = timestamp
            headers[SIGNATURE_HEADER] = sign(self._secret, timestamp, body)
        return headers

    async def deliver(self, notification: Notification) -> DeliveryOutcome:
        url = notification.route.channel.target
        body = json.dumps(event_body(notification), ensure_ascii=False).encode()
        headers = self.headers_for(notification, body)
        try:
            if self._client is not None:
                response = await self._client.post(
                    url, content=body, headers=headers, timeout=self._timeout
                )
            else:
                async with httpx2.AsyncClient(timeout=self._timeout) as client:
                    response = await client.post(url, content=body, headers=headers)
        except httpx2.HTTPError as exc:
            return DeliveryOutcome(Sent.RETRY, f"webhook unreachable: {type(exc).__name__}")
        status = response.status_code
        log.info("notification.webhook", pending_id=notification.pending_id, status=status)
        if 200 <= status < 300:
            return DeliveryOutcome(Sent.SENT)
        if status >= 500 or status in RETRYABLE_STATUSES:
            return DeliveryOutcome(Sent.RETRY, f"webhook answered {status}")
        return DeliveryOutcome(Sent.PERMANENT, f"webhook answered {status}")


__all__ = ["WebhookNotifier"]
