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
    """The JSON body of one resume POST (interfaces.md "Resume dispatch")."""
    return {
        "task_id": request.task_id,
        "session_id": request.session_id,
        "pending_id": request.pending_id,
        "prompt": request.prompt,
        "answers": [response_metadata(answer) for answer in request.answers],
        "rejected": request.rejected,
    }


class WebhookResumeDispatcher:
    """:class:`clarion.ports.ResumeDispatcher` over HTTP.

    ``client`` may be injected (for connection reuse, custom TLS, or an ``httpx2.MockTransport``
    in tests); it is then the caller's to close. Without one, each dispatch opens and closes its
    own client — resumes are rare, and nothing is left open between them.
    """

    def __init__(
        self,
        url: str,
        *,
        client: httpx2.AsyncClient | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        headers: dict[str, str] | None = None,
        secret: str = "",
        now: Callable[[], float] = time.time,
    ) -> None:
        self._url = url
        self._client = client
        self._timeout = timeout
        self._headers = dict(headers or {})
        self._secret = secret
        self._now = now

    async def dispatch(self, request: ResumeRequest) -> None:
        """POST the resume.

        Raises:
            ResumeRefused: a non-2xx status, a transport error or a timeout.
        """
        try:
            if self._client is not None:
                response = await self._post(self._client, request)
            else:
                async with httpx2.AsyncClient(timeout=self._timeout) as client:
                    response = await self._post(client, request)
        except httpx2.HTTPError as exc:
            log.warning(
                "resume.webhook_unreachable",
                pending_id=request.pending_id,
                error=type(exc).__name__,
            )
            raise ResumeRefused(f"resume webhook failed: {type(exc).__name__}") from exc
        if not 200 <= response.status_code < 300:
            log.warning(
                "resume.webhook_refused",
                pending_id=request.pending_id,
                status=response.status_code,
            )
            raise ResumeRefused(f"resume webhook answered {response.status_code}")
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

    async def _post(self, client: httpx2.AsyncClient, request: ResumeRequest) -> httpx2.Response:
        body = json.dumps(webhook_payload(request), ensure_ascii=False).encode()
        return await client.post(
            self._url,
            content=body,
            headers=self.headers_for(request, body),
            timeout=self._timeout,
        )
