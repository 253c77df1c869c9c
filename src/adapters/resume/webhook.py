"""A resume dispatcher that POSTs the resume to an HTTP endpoint (``CLARION_RESUME_WEBHOOK``).

Body: ``{"task_id", "session_id", "pending_id", "prompt", "answers", "rejected"}`` where each
answer is ``{"question_id", "selected_options", "custom_text"}`` (every key always present).
A 2xx response within the bounded wait means accepted; any other status, a transport error or
the timeout means refused, and the resolver rolls the claim back (R7).
"""

from __future__ import annotations

from typing import Any

import httpx2
import structlog

from clarion.domain.rows import response_metadata
from clarion.ports.resume import ResumeRefused, ResumeRequest

log = structlog.get_logger(__name__)

DEFAULT_TIMEOUT_S = 30.0


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
    ) -> None:
        self._url = url
        self._client = client
        self._timeout = timeout
        self._headers = dict(headers or {})

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

    async def _post(self, client: httpx2.AsyncClient, request: ResumeRequest) -> httpx2.Response:
        return await client.post(
            self._url,
            json=webhook_payload(request),
            headers=self._headers,
            timeout=self._timeout,
        )
