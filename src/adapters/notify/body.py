"""The notification event body, version 1 (docs/notifications.md "Event body").

Every key is always present. ``answers`` is empty unless the route opted in
(``include_answers``) and the event is ``resolved``; nothing else ever carries answer text.
"""

from __future__ import annotations

from typing import Any, Final

from clarion.domain.model import Question
from clarion.domain.rows import response_metadata
from clarion.ports.notifications import Notification

BODY_VERSION: Final = 1


def question_body(question: Question) -> dict[str, Any]:
    return {
        "id": question.id,
        "title": question.title,
        "prompt": question.prompt,
        "options": [
            {"option_id": o.option_id, "label": o.label, "description": o.description}
            for o in question.options
        ],
    }


def event_body(notification: Notification) -> dict[str, Any]:
    """The JSON object a webhook receives (and the e-mail and Apprise texts are built from)."""
    return {
        "version": BODY_VERSION,
        "event": notification.event,
        "idempotency_key": notification.idempotency_key,
        "occurred_at": notification.occurred_at.isoformat(),
        "sequence": notification.sequence,
        "route_id": notification.route.id,
        "link": notification.link,
        "bundle": {
            "pending_id": notification.pending_id,
            "task_id": notification.task_id,
            "workspace_id": notification.workspace_id,
            "status": notification.status,
            "context": notification.context,
            "questions": [question_body(q) for q in notification.questions],
        },
        "answers": [response_metadata(answer) for answer in notification.answers],
        "rejected": notification.rejected,
    }


def subject(notification: Notification) -> str:
    """A one-line summary: what happened to which bundle."""
    first = notification.questions[0] if notification.questions else None
    topic = (first.title or first.prompt) if first is not None else notification.pending_id
    more = len(notification.questions) - 1
    suffix = f" (+{more} more)" if more > 0 else ""
    lead = {
        "answerable": "Question waiting",
        "reminder": "Reminder: question waiting",
        "escalation": "Escalated: question waiting",
        "resolved": "Answered",
        "expired": "Expired",
        "cancelled": "Cancelled",
        "superseded": "Closed without an answer (the agent moved on)",
    }.get(notification.event, notification.event)
    return f"[Clarion] {lead}: {topic}{suffix}"


__all__ = ["BODY_VERSION", "event_body", "question_body", "subject"]
