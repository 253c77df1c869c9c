"""Message and bundle update events (the ``session.message.updated`` broadcast)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol, runtime_checkable

import attrs


@attrs.frozen
class Event:
    """One update. ``kind`` is e.g. "bundle.created", "bundle.resolved", "bundle.detached",
    "bundle.expired", "bundle.restored", "session.updated", "turn.started"."""

    kind: str
    task_id: str
    session_id: str
    pending_id: str = ""
    data: Mapping[str, Any] = attrs.field(factory=dict)


class EventPublisher(Protocol):
    """Publishes events. Only winners and lifecycle writes publish (R2, R4); publishing never
    blocks the caller and never raises for a slow or gone subscriber."""

    def publish(self, event: Event) -> None: ...


@runtime_checkable
class EventSource(Protocol):
    """Subscribing side of the fan-out, consumed by the event stream and the web inbox (a
    publisher that is also a source is one ``isinstance(publisher, EventSource)``)."""

    def subscribe(self) -> AsyncIterator[Event]:
        """Events published after the call, until the consumer stops iterating."""
        ...
