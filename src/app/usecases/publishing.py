"""The events use cases publish (only winners and lifecycle writes publish: R2, R4)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from clarion.domain.host import Session
from clarion.domain.rows import ClarificationRow
from clarion.ports.events import Event, EventPublisher

log = structlog.get_logger(__name__)

BUNDLE_CREATED = "bundle.created"
BUNDLE_RESOLVED = "bundle.resolved"
BUNDLE_RESTORED = "bundle.restored"
BUNDLE_DETACHED = "bundle.detached"
BUNDLE_EXPIRED = "bundle.expired"
BUNDLE_CANCELLED = "bundle.cancelled"
BUNDLE_SUPERSEDED = "bundle.superseded"  # issue #30: a newer turn closed it (no row written)
SESSION_UPDATED = "session.updated"
TURN_STARTED = "turn.started"


def publish(events: EventPublisher, event: Event) -> None:
    """Publish without letting a publisher failure undo durable work: the durable state is
    authoritative, an event is a hint (facts §5.8: a publish failure after a restore still
    reports "can be retried")."""
    try:
        events.publish(event)
    except Exception:  # noqa: BLE001 - a host's publisher must not turn a success into a 500
        log.warning("event.publish_failed", kind=event.kind, pending_id=event.pending_id)


# Issue #30: the bundle events that close a bundle without an answer, and the history's reason.
CLOSED_REASON_OF = {
    BUNDLE_EXPIRED: "expired",
    BUNDLE_CANCELLED: "cancelled",
    BUNDLE_SUPERSEDED: "superseded",
}


def publish_bundles(
    events: EventPublisher, kind: str, rows: Iterable[ClarificationRow], task_id: str
) -> int:
    """One ``kind`` event per bundle among ``rows``; returns how many bundles there were. A
    kind that closes a bundle without an answer also logs ``clarification.closed`` (#30)."""
    grouped: dict[str, list[ClarificationRow]] = {}
    for row in rows:
        grouped.setdefault(row.pending_id, []).append(row)
    for pending_id, bundle_rows in grouped.items():
        if kind in CLOSED_REASON_OF:
            log.info("clarification.closed", pending_id=pending_id, reason=CLOSED_REASON_OF[kind])
        publish(events, bundle_event(kind, pending_id, bundle_rows, task_id))
    return len(grouped)


def publish_superseded(
    events: EventPublisher,
    pending_ids: Iterable[str],
    *,
    task_id: str,
    session_id: str,
    turn_id: str = "",
) -> None:
    """Issue #30: the bundles a new turn (``turn_id`` when known) closed — facts §4.4 writes
    nothing to them: a ``clarification.closed`` log line and a ``bundle.superseded`` event
    each (data: ``reason`` and, when known, ``turn_id``)."""
    data = {"reason": "superseded"} | ({"turn_id": turn_id} if turn_id else {})
    for pending_id in pending_ids:
        log.info(
            "clarification.closed",
            pending_id=pending_id,
            reason=CLOSED_REASON_OF[BUNDLE_SUPERSEDED],
            session_id=session_id,
            turn_id=turn_id,
        )
        publish(
            events,
            Event(
                kind=BUNDLE_SUPERSEDED,
                task_id=task_id,
                session_id=session_id,
                pending_id=pending_id,
                data=data,
            ),
        )


def bundle_event(
    kind: str, pending_id: str, rows: Iterable[ClarificationRow], task_id: str
) -> Event:
    rows = tuple(rows)
    data: Mapping[str, Any] = {
        "message_ids": [row.id for row in rows],
        "statuses": [row.display_status for row in rows],
    }
    session_id = rows[0].session_id if rows else ""
    return Event(
        kind=kind, task_id=task_id, session_id=session_id, pending_id=pending_id, data=data
    )


def session_event(session: Session) -> Event:
    return Event(
        kind=SESSION_UPDATED,
        task_id=session.task_id,
        session_id=session.id,
        data={"state": session.state},
    )
