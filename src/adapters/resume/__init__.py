"""Resume dispatchers: where a detached answer's resume prompt goes (spec R7, R9)."""

from clarion.adapters.resume.callable import CallableResumeDispatcher
from clarion.adapters.resume.outbox import OutboxResumeDispatcher
from clarion.adapters.resume.webhook import (
    WebhookResumeDispatcher,
    is_plain_http_to_another_host,
    webhook_payload,
)
from clarion.domain.signing import sign

__all__ = [
    "CallableResumeDispatcher",
    "OutboxResumeDispatcher",
    "WebhookResumeDispatcher",
    "is_plain_http_to_another_host",
    "sign",
    "webhook_payload",
]
