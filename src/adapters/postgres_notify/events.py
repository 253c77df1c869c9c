""":class:`clarion.ports.EventPublisher` and :class:`clarion.ports.EventSource` across processes.

An event is handed to this process's own fan-out at once and broadcast over ``NOTIFY``; every
other process hands it to its fan-out when it arrives, so the event stream of every process
sees every update. Publishing never blocks and never raises: the broadcast is queued. Events
are hints (the durable rows are the truth): those published while a process's listener is
reconnecting do not reach it, and consumers re-read state when they reconnect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from clarion.adapters.postgres_notify.link import NotifyLink
from clarion.adapters.postgres_notify.protocol import Published
from clarion.ports.events import Event, EventPublisher, EventSource


class LocalEventBus(EventPublisher, EventSource, Protocol):
    """The in-process fan-out this adapter feeds (e.g. ``InProcessEventBus``)."""


class PostgresEventBus:
    """Publishes locally and to every other process; subscribes to the local fan-out."""

    def __init__(self, local: LocalEventBus, link: NotifyLink) -> None:
        self._local = local
        self._link = link

    def publish(self, event: Event) -> None:
        self._local.publish(event)
        self._link.post(Published(event))

    def subscribe(self) -> AsyncIterator[Event]:
        return self._local.subscribe()

    def receive(self, event: Event) -> None:
        """An event another process published."""
        self._local.publish(event)
