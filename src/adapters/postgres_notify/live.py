"""Live delivery and events for several Clarion processes on one PostgreSQL database.

Build one :class:`PostgresLiveDelivery` per process, hand its ``waiters`` and ``events`` to the
use cases, and run it for the life of the server::

    live = postgres_waiters_and_events(
        "postgresql+psycopg://clarion@db/clarion",
        claims=claims,                     # the process's ClaimRepository (for re-checks)
        local_waiters=InMemoryWaiters(),   # where this process's agents block
        local_events=InProcessEventBus(),  # what this process's event streams read
    )
    services = build_services(waiters=live.waiters, events=live.events, ...)
    async with live:                       # in the ASGI lifespan
        ...

Nothing connects before ``async with``; entering connects and starts listening (and raises
when the database cannot be reached); leaving says goodbye and closes the connections.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Final

import anyio
from sqlalchemy.engine import URL, Engine, make_url

from clarion.adapters.postgres_notify.events import LocalEventBus, PostgresEventBus
from clarion.adapters.postgres_notify.link import NotifyLink, backoff
from clarion.adapters.postgres_notify.protocol import Bye, Envelope, Published
from clarion.adapters.postgres_notify.waiters import (
    LIVENESS_INTERVAL_S,
    RECHECK_INTERVAL_S,
    PostgresWaiters,
)
from clarion.ports.claims import ClaimRepository
from clarion.ports.threads import Offload
from clarion.ports.waiters import Waiters

DEFAULT_CHANNEL: Final = "clarion_live"
GOODBYE_TIMEOUT_S: Final = 2.0


def libpq_conninfo(database: str | URL | Engine) -> str:
    """A libpq connection string for a SQLAlchemy PostgreSQL URL (any driver) or engine.

    Raises:
        ValueError: the database is not PostgreSQL.
    """
    url = database.url if isinstance(database, Engine) else make_url(database)
    if url.get_backend_name() != "postgresql":
        raise ValueError(f"live delivery over LISTEN/NOTIFY needs PostgreSQL, not {url.drivername}")
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresLiveDelivery:
    """The ``Waiters`` and the event publisher/source of one process, kept in step with every
    other process on the same database. Use as an async context manager."""

    def __init__(
        self,
        database: str | URL | Engine,
        *,
        claims: ClaimRepository,
        local_waiters: Waiters,
        local_events: LocalEventBus,
        channel: str = DEFAULT_CHANNEL,
        instance: str | None = None,
        offload: Offload | None = None,
        reconnect_delay: Callable[[int], Awaitable[None]] = backoff,
        liveness_interval: float = LIVENESS_INTERVAL_S,
        recheck_interval: float = RECHECK_INTERVAL_S,
    ) -> None:
        if not channel.isidentifier() or len(channel) > 30:
            raise ValueError("channel must be an identifier of at most 30 characters")
        self.instance = instance or uuid.uuid4().hex[:16]
        self._link = NotifyLink(
            libpq_conninfo(database),
            channel=channel,
            instance=self.instance,
            on_message=self._receive,
            on_connected=self._connected,
            reconnect_delay=reconnect_delay,
        )
        self.waiters = PostgresWaiters(
            local=local_waiters,
            link=self._link,
            claims=claims,
            offload=offload,
            liveness_interval=liveness_interval,
            recheck_interval=recheck_interval,
        )
        self.events = PostgresEventBus(local_events, self._link)
        self._stack: contextlib.AsyncExitStack | None = None

    @property
    def listening(self) -> bool:
        """True while the listener connection is up (notifications reach this process)."""
        return self._link.listening

    @property
    def listener_pid(self) -> int | None:
        """The PostgreSQL backend pid of the listener connection (for operators' queries)."""
        return self._link.listener_pid

    async def sync(self) -> None:
        """Return once every notification committed before the call has been handled here.

        Raises:
            LinkUnavailable: the database could not be reached.
        """
        await self.waiters.sync()

    async def __aenter__(self) -> PostgresLiveDelivery:
        async with contextlib.AsyncExitStack() as stack:
            # Unwound in reverse: stop the tasks, wait for them, then close the connections.
            stack.push_async_callback(self._link.close)
            tasks = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tasks.cancel_scope.cancel)
            self.waiters.attach(tasks)
            await self._link.start(tasks)
            tasks.start_soon(self.waiters.watch_members)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        stack, self._stack = self._stack, None
        if stack is None:
            return
        with anyio.move_on_after(GOODBYE_TIMEOUT_S, shield=True), contextlib.suppress(Exception):
            await self._link.send(Bye())
        await stack.aclose()

    def _receive(self, envelope: Envelope) -> None:
        message = envelope.message
        if isinstance(message, Published):
            if envelope.sender != self.instance:
                self.events.receive(message.event)
            return
        self.waiters.receive(envelope)

    def _connected(self, reconnected: bool) -> None:
        self.waiters.connected(reconnected)


def postgres_waiters_and_events(
    database: str | URL | Engine,
    *,
    claims: ClaimRepository,
    local_waiters: Waiters,
    local_events: LocalEventBus,
    channel: str = DEFAULT_CHANNEL,
    offload: Offload | None = None,
) -> PostgresLiveDelivery:
    """What the composition root calls when ``CLARION_LIVE_DELIVERY`` is ``postgres``: the
    process's waiters and events, to be run with ``async with`` for the life of the server.

    Raises:
        ValueError: the database is not PostgreSQL, or ``channel`` is not a short identifier.
    """
    return PostgresLiveDelivery(
        database,
        claims=claims,
        local_waiters=local_waiters,
        local_events=local_events,
        channel=channel,
        offload=offload,
    )
