"""A resume dispatcher that POSTs the resume to an HTTP endpoint (``CLARION_RESUME_WEBHOOK``).

Body: ``{"task_id", "session_id", "pending_id", "prompt", "answers", "rejected"}`` where each
answer is ``{"question_id", "selected_options", "custom_text"}`` (every key always present).
A 2xx response within the bounded wait means accepted; any other status, a transport error or
the timeout means refused, and the resolver rolls the claim back (R7).

Delivery is at-least-once: a receiver that processed a POST whose 2xx Clarion never saw (a crash,
the timeout) may later receive a resume for a new claim of the same bundle, possibly with a
different answer. Every POST therefore carries ``Idempotency-Key`` — the same for every POST of
one claim, new for a new claim — and, with a secret, ``Clarion-Timestamp`` (Unix seconds) and
``Clarion-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`` so the receiver can
check the sender (``docs/operations.md`` has a receiver that verifies both).

Issue #29 S4: the POST goes through :mod:`clarion.adapters.outbound` — the host is resolved
once and refused when it is an internal address (loopback, private, link-local, …) that
``CLARION_OUTBOUND_ALLOW`` does not allow, the connection goes to the address checked,
redirects are not followed (a 3xx is a refusal like any non-2xx), the whole POST has one
deadline and at most 64 KiB of the answer is read.
"""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx2
import structlog

from clarion.adapters.outbound import (
    OutboundPolicy,
    OutboundRefused,
    OutboundResponse,
    OutboundUnresolved,
    send,
)
from clarion.domain.rows import response_metadata
from clarion.domain.signing import sign
from clarion.ports.resume import ResumeRefused, ResumeRequest

log = structlog.get_logger(__name__)

DEFAULT_TIMEOUT_S = 30.0
KEY_HEADER = "Idempotency-Key"
TIMESTAMP_HEADER = "Clarion-Timestamp"
SIGNATURE_HEADER = "Clarion-Signature"


def is_plain_http_to_another_host(url: str) -> bool:
    """True for an ``http://`` URL whose host is not loopback (answers would cross a network
    in clear text)."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "http":
        return False
    host = (parts.hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


def webhook_payload(request: ResumeRequest) -> dict[str, Any]:
    """The JSON body of one resume POST (interfaces.md "Resume dispatch"); with the claim's
    signed ``receipt`` when there is one (issue #34, additive)."""
    payload = {
        "task_id": request.task_id,
        "session_id": request.session_id,
        "pending_id": request.pending_id,
        "prompt": request.prompt,
        "answers": [response_metadata(answer) for answer in request.answers],
        "rejected": request.rejected,
    }
    if request.receipt is not None:
        payload["receipt"] = dict(request.receipt)
    return payload


class WebhookResumeDispatcher:
    """:class:`clarion.ports.ResumeDispatcher` over HTTP.

    ``client`` may be injected (for custom TLS, or an ``httpx2.MockTransport`` in tests); it
    is then the caller's to close, and its transport decides where it connects (no address
    check). Without one, each dispatch connects to the address ``policy`` checked — resumes are
    rare, and nothing is left open between them.
    """

    def __init__(
        self,
        url: str,
        *,
        client: httpx2.AsyncClient | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        headers: dict[str, str] | None = None,
        secret: str = "",
        policy: OutboundPolicy | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self._url = url
        self._policy = policy if policy is not None else OutboundPolicy()
        self._client = client
        self._timeout = timeout
        self._headers = dict(headers or {})
        self._secret = secret
        self._now = now

    async def dispatch(self, request: ResumeRequest) -> None:
        """POST the resume.

        Raises:
            ResumeRefused: a non-2xx status, a refused (internal) destination, a transport
                error or a timeout.
        """
        try:
            response = await self._post(request)
        except (OutboundRefused, OutboundUnresolved) as exc:
            log.warning("resume.webhook_refused_destination", pending_id=request.pending_id)
            raise ResumeRefused(f"resume webhook destination refused: {exc}") from exc
        except (httpx2.HTTPError, TimeoutError) as exc:
            log.warning(
                "resume.webhook_unreachable",
                pending_id=request.pending_id,
                error=type(exc).__name__,
            )
            raise ResumeRefused(f"resume webhook failed: {type(exc).__name__}") from exc
        if not 200 <= response.status < 300:
            log.warning(
                "resume.webhook_refused",
                pending_id=request.pending_id,
                status=response.status,
            )
            raise ResumeRefused(f"resume webhook answered {response.status}")
        log.info("resume.webhook_accepted", pending_id=request.pending_id)

    def headers_for(self, request: ResumeRequest, body: bytes) -> dict[str, str]:
        """The headers of the POST carrying ``body`` for ``request``."""
        headers = {
            **self._headers,
            "Content-Type": "application/json",
            KEY_HEADER: request.idempotency_key,
        }
        if self._secret:
            timestamp = str(int(self._now()))
            headers[TIMESTAMP_HEADER] = timestamp
            headers[SIGNATURE_HEADER] = sign(self._secret, timestamp, body)
        return headers

    async def _post(self, request: ResumeRequest) -> OutboundResponse:
        body = json.dumps(webhook_payload(request), ensure_ascii=False).encode()
        return await send(
            "POST",
            self._url,
            policy=self._policy,
            content=body,
            headers=self.headers_for(request, body),
            deadline_s=self._timeout,
            client=self._client,
        )
