"""The webhook channel: a JSON POST of the versioned event body (:mod:`.body`), signed like the
resume webhook (``Clarion-Timestamp`` and ``Clarion-Signature``, :mod:`clarion.domain.signing`)
— with the server-wide secret when one is configured, else with the route's own secret (every
webhook route gets one when it is created: signed by default, issue #29) — and carrying
``Idempotency-Key`` — the same on every retry of one notification — and ``Clarion-Event``.

Sent through :mod:`clarion.adapters.outbound` (issue #29): the URL's host is resolved once and
refused when internal (unless ``CLARION_OUTBOUND_ALLOW`` allows it), the connection goes to the
address checked, redirects are not followed, the whole attempt has one deadline and at most
64 KiB of the answer is read.

A 2xx is sent; 408, 425, 429, any 5xx, a transport error or the deadline are retried; a refused
(internal) destination and any other status are permanent (the receiver refuses it and will
keep refusing).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx2
import structlog

from clarion.adapters.notify.body import event_body
from clarion.adapters.outbound import (
    DEFAULT_MAX_BYTES,
    OutboundPolicy,
    OutboundRefused,
    OutboundUnresolved,
    send,
)
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

    ``secret`` (the server-wide one) signs every POST when set; otherwise the route's own
    ``secret`` does. ``policy`` says which internal addresses may be reached (none by default);
    ``timeout`` bounds the whole attempt. ``client`` may be injected (tests); it is then the
    caller's to close, and its transport decides where it connects (no address check).
    """

    def __init__(
        self,
        *,
        secret: str = "",
        timeout: float = 10.0,
        policy: OutboundPolicy | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        client: httpx2.AsyncClient | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret
        self._timeout = timeout
        self._policy = policy if policy is not None else OutboundPolicy()
        self._max_bytes = max_bytes
        self._client = client
        self._now = now

    def headers_for(self, notification: Notification, body: bytes) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            KEY_HEADER: notification.idempotency_key,
            EVENT_HEADER: notification.event,
        }
        secret = self._secret or notification.route.secret
        if secret:
            timestamp = str(int(self._now()))
            headers[TIMESTAMP_HEADER] = timestamp
            headers[SIGNATURE_HEADER] = sign(secret, timestamp, body)
        return headers

    async def deliver(self, notification: Notification) -> DeliveryOutcome:
        url = notification.route.channel.target
        body = json.dumps(event_body(notification), ensure_ascii=False).encode()
        headers = self.headers_for(notification, body)
        try:
            response = await send(
                "POST",
                url,
                policy=self._policy,
                content=body,
                headers=headers,
                deadline_s=self._timeout,
                max_bytes=self._max_bytes,
                client=self._client,
            )
        except OutboundRefused as exc:
            log.warning("notification.webhook_refused", pending_id=notification.pending_id)
            return DeliveryOutcome(Sent.PERMANENT, f"webhook refused: {exc}")
        except OutboundUnresolved as exc:
            return DeliveryOutcome(Sent.RETRY, str(exc))
        except TimeoutError:
            return DeliveryOutcome(Sent.RETRY, f"webhook timed out after {self._timeout:g} s")
        except httpx2.HTTPError as exc:
            return DeliveryOutcome(Sent.RETRY, f"webhook unreachable: {type(exc).__name__}")
        status = response.status
        log.info("notification.webhook", pending_id=notification.pending_id, status=status)
        if 200 <= status < 300:
            return DeliveryOutcome(Sent.SENT)
        if status >= 500 or status in RETRYABLE_STATUSES:
            return DeliveryOutcome(Sent.RETRY, f"webhook answered {status}")
        return DeliveryOutcome(Sent.PERMANENT, f"webhook answered {status}")


__all__ = ["WebhookNotifier"]
