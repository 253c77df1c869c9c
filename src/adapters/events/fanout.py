"""An in-process fan-out of message and bundle updates (the ``session.message.updated`` role).

Every subscription has its own bounded queue. Publishing appends to each queue and returns at
once: it never waits for a consumer. A subscriber that falls more than ``capacity`` events
behind loses the newest events that do not fit — its ``dropped`` counter says how many — so one
slow browser tab can never stall an answer (R4 publishes from the resolver's path). Consumers
that must not miss state re-read it (the list query) when ``dropped`` grows.

The bus belongs to one event loop: publish and consume from that loop. Subscriptions are held
weakly, so one that is dropped without being closed stops receiving events when it is collected.
"""

from __future__ import annotations

import collections
import weakref
from types import TracebackType

import anyio

from clarion.ports.events import Event

DEFAULT_CAPACITY = 1000


class Subscription:
    """Events published after :meth:`InProcessEventBus.subscribe` returned, in publish order.

    Iterate with ``async for``; stop with :meth:`aclose` (or use ``async with``), after which
    iteration ends once the already-queued events are consumed.
    """

    def __init__(self, bus: InProcessEventBus, capacity: int) -> None:
        self._bus = bus
        self._capacity = capacity
        self._queue: collections.deque[Event] = collections.deque()
        self._ready = anyio.Event()
        self._closed = False
        self.dropped = 0

    def offer(self, event: Event) -> None:
        """Queue ``event`` without blocking; count it as dropped when the queue is full."""
        if self._closed:
            return
        if len(self._queue) >= self._capacity:
            self.dropped += 1
            return
        self._queue.append(event)
        self._ready.set()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        while not self._queue:
            if self._closed:
                raise StopAsyncIteration
            self._ready = anyio.Event()
            await self._ready.wait()
        return self._queue.popleft()

    async def aclose(self) -> None:
        """Stop receiving events and wake a pending ``__anext__``."""
        self._closed = True
        self._bus.unsubscribe(self)
        self._ready.set()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


class InProcessEventBus:
    """:class:`clarion.ports.EventPublisher` and :class:`clarion.ports.EventSource` in one
    process, with a bounded queue of ``capacity`` events per subscriber."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._capacity = capacity
        self._subscriptions: weakref.WeakSet[Subscription] = weakref.WeakSet()

    @property
    def subscriber_count(self) -> int:
        return len(self._subscriptions)

    def publish(self, event: Event) -> None:
        """Queue ``event`` for every current subscriber; never blocks, never raises for them."""
        for subscription in list(self._subscriptions):
            subscription.offer(event)

    def subscribe(self) -> Subscription:
        """Start a subscription now: it sees every event published from this call on."""
        subscription = Subscription(self, self._capacity)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)
