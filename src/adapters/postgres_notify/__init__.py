"""Live delivery and events across several Clarion processes sharing one PostgreSQL database,
over ``LISTEN/NOTIFY`` (no other infrastructure).

    live = postgres_waiters_and_events(url, claims=..., local_waiters=..., local_events=...)
    async with live:    # for the life of the server
        ...             # live.waiters is a Waiters, live.events an EventPublisher/EventSource
"""

from clarion.adapters.postgres_notify.events import LocalEventBus, PostgresEventBus
from clarion.adapters.postgres_notify.link import LinkUnavailable
from clarion.adapters.postgres_notify.live import (
    DEFAULT_CHANNEL,
    PostgresLiveDelivery,
    libpq_conninfo,
    postgres_waiters_and_events,
)
from clarion.adapters.postgres_notify.waiters import PostgresWaiters

__all__ = [
    "DEFAULT_CHANNEL",
    "LinkUnavailable",
    "LocalEventBus",
    "PostgresEventBus",
    "PostgresLiveDelivery",
    "PostgresWaiters",
    "libpq_conninfo",
    "postgres_waiters_and_events",
]
