"""Resume dispatchers: where a detached answer's resume prompt goes (spec R7, R9)."""

from clarion.adapters.resume.callable import CallableResumeDispatcher
from clarion.adapters.resume.outbox import OutboxResumeDispatcher
from clarion.adapters.resume.webhook import WebhookResumeDispatcher, webhook_payload

__all__ = [
    "CallableResumeDispatcher",
    "OutboxResumeDispatcher",
    "WebhookResumeDispatcher",
    "webhook_payload",
]
