"""The in-process event fan-out: ordered delivery, bounded queues, no blocked publisher."""

from __future__ import annotations

import gc

import anyio
import pytest

from clarion.adapters.events import InProcessEventBus
from clarion.ports.events import Event, EventPublisher, EventSource

pytestmark = pytest.mark.anyio


def _event(number: int) -> Event:
    return Event(kind="bundle.resolved", task_id="t1", session_id="s1", pending_id=f"p{number}")


async def test_the_bus_is_both_publisher_and_source() -> None:
    bus = InProcessEventBus()
    publisher: EventPublisher = bus
    source: EventSource = bus
    stream = source.subscribe()
    publisher.publish(_event(1))
    assert (await anext(stream)).pending_id == "p1"


async def test_subscriber_receives_events_published_after_subscribing_in_order() -> None:
    bus = InProcessEventBus()
    bus.publish(_event(0))
    received: list[str] = []
    async with bus.subscribe() as subscription:
        for number in (1, 2, 3):
            bus.publish(_event(number))
        async for event in subscription:
            received.append(event.pending_id)
            if len(received) == 3:
                break
    assert received == ["p1", "p2", "p3"]


async def test_every_subscriber_gets_every_event() -> None:
    bus = InProcessEventBus()
    first, second = bus.subscribe(), bus.subscribe()
    bus.publish(_event(1))
    assert (await anext(first)).pending_id == "p1"
    assert (await anext(second)).pending_id == "p1"
    await first.aclose()
    await second.aclose()


async def test_waiting_subscriber_wakes_when_an_event_is_published() -> None:
    bus = InProcessEventBus()
    subscription = bus.subscribe()
    received: list[Event] = []

    async def consume() -> None:
        received.append(await anext(subscription))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(consume)
        await anyio.lowlevel.checkpoint()
        bus.publish(_event(7))
    assert [event.pending_id for event in received] == ["p7"]
    await subscription.aclose()


async def test_slow_subscriber_drops_events_instead_of_blocking_the_publisher() -> None:
    bus = InProcessEventBus(capacity=2)
    slow = bus.subscribe()
    for number in range(5):
        bus.publish(_event(number))  # returns at once although nobody consumes
    assert slow.dropped == 3
    assert (await anext(slow)).pending_id == "p0"
    assert (await anext(slow)).pending_id == "p1"
    await slow.aclose()


async def test_closed_subscription_ends_iteration_and_stops_receiving() -> None:
    bus = InProcessEventBus()
    subscription = bus.subscribe()
    await subscription.aclose()
    bus.publish(_event(1))
    assert [event async for event in subscription] == []
    assert bus.subscriber_count == 0


async def test_closing_wakes_a_consumer_blocked_on_the_next_event() -> None:
    bus = InProcessEventBus()
    subscription = bus.subscribe()
    ended = anyio.Event()

    async def consume() -> None:
        async for _ in subscription:
            pass
        ended.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(consume)
        await anyio.lowlevel.checkpoint()
        await subscription.aclose()
    assert ended.is_set()


def test_forgotten_subscription_is_released_when_collected() -> None:
    bus = InProcessEventBus()
    bus.subscribe()
    gc.collect()
    assert bus.subscriber_count == 0


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        InProcessEventBus(capacity=0)
