"""One slow or failing destination delays nobody else (issue #29 S2), on memory, SQLite and
PostgreSQL: deliveries run concurrently under a deadline for the whole attempt, a failing
route backs off as a whole, and deadlines keep their own clock while a delivery hangs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from clarion.app.usecases.notifications import SHARED_READ_S
from clarion.domain.model import EXPIRED
from clarion.domain.notifications import ANSWERABLE, DONE, EXPIRED_EVENT
from clarion.ports.notifications import DeliveryOutcome, Notification, Sent
from clarion.ports.testing import ManualClock
from tests.integration.notifications.conftest import BACKENDS
from tests.integration.notifications.support import (
    FakeChannel,
    NotifyWorld,
    count_bundle_loads,
    notify_world,
    storage_for,
)

pytestmark = pytest.mark.anyio

SLOW = "webhook:https://slow.example/hook"
FAST = "webhook:https://fast.example/hook"
# Far beyond the deadline below: the old worker, which had none, waits on it for good.
NEVER_S = 3600.0


class HangingChannel(FakeChannel):
    """Like :class:`FakeChannel`, but a delivery to ``slow.example`` never answers."""

    async def deliver(self, notification: Notification) -> DeliveryOutcome:
        if "slow.example" in notification.route.channel.target:
            self.sent.append(notification)
            await anyio.sleep(NEVER_S)
        return await super().deliver(notification)


@pytest.fixture(name="hanging")
def fixture_hanging(
    request: pytest.FixtureRequest, tmp_path: Path, notify_clock: ManualClock
) -> Iterator[NotifyWorld]:
    """A world (each backend) whose webhook channel hangs for slow.example, with a deadline of
    one second per delivery (30 s for the running worker's test, so that only concurrency lets
    the other route through)."""
    backend = request.param if hasattr(request, "param") else "memory"
    with storage_for(backend, request, tmp_path) as storage:
        channel = HangingChannel()
        timeout = 30.0 if "running_worker" in request.node.name else 1.0
        world = notify_world(
            storage,
            notify_clock,
            {"webhook": channel},
            notify_timeout_s=timeout,
            notify_poll_s=0.05,
        )
        world.channel = channel
        try:
            yield world
        finally:
            if storage.close_probe is not None:
                storage.close_probe()


def _by_target(world: NotifyWorld, target: str) -> list[str]:
    return [
        e.status
        for e in world.entries()
        if e.route_id and world.store.get_route(e.route_id).channel.target == target  # type: ignore[union-attr]
    ]


@pytest.mark.parametrize("hanging", BACKENDS, indirect=True)
async def test_a_destination_that_never_answers_delays_no_other_route(
    hanging: NotifyWorld,
) -> None:
    """#29 S2: the other route is delivered, and the hanging attempt ends at its deadline
    (retried later), so the round ends."""
    world = hanging
    world.route("", SLOW, events=(ANSWERABLE,))
    world.route("", FAST, events=(ANSWERABLE,))
    world.ask("")
    with anyio.fail_after(60):
        await world.worker.run_once()  # the fan-out and, in the same round (#32), both deliveries
    assert (ANSWERABLE, "https://fast.example/hook") in world.channel.events()
    assert _by_target(world, "https://fast.example/hook") == [DONE]
    (slow,) = [e for e in world.entries() if e.route_id and e.status != DONE]
    assert slow.attempts == 1
    assert "no answer within 1 s" in slow.last_error


@pytest.mark.parametrize("hanging", BACKENDS, indirect=True)
async def test_a_deadline_keeps_its_clock_while_a_delivery_hangs(hanging: NotifyWorld) -> None:
    """#29 S2: a deadline due in the same round as a hanging delivery is applied (the old
    worker, one entry after another, never got to it)."""
    world = hanging
    world.route("", SLOW, events=(ANSWERABLE,))
    world.route("", FAST, events=(EXPIRED_EVENT,), deadline_after_s=60.0, on_deadline="expire")
    world.ask("")
    await world.worker.run_once()  # the fan-out: the slow delivery now, the deadline at +60 s
    world.advance(61)
    with anyio.fail_after(60):
        await world.worker.run_once()
    bundle = world.clarion.storage.claims.load_bundle("p-1")
    assert bundle is not None
    assert bundle.rows[0].status == EXPIRED


@pytest.mark.parametrize("hanging", BACKENDS, indirect=True)
async def test_a_failing_route_backs_off_as_a_whole(hanging: NotifyWorld) -> None:
    """#29 S2: after one transient failure, the route's other due deliveries are rescheduled
    to the end of its backoff instead of being attempted; every one is delivered later."""
    world = hanging
    world.route("", FAST, events=(ANSWERABLE,))
    world.ask("", pending_id="p-1")
    world.ask("", pending_id="p-2")
    world.channel.script = [Sent.RETRY]
    await world.worker.run_once()  # both fan-outs and, in the same round (#32), their deliveries
    assert len(world.channel.sent) == 1  # one attempt; the other waited for the backoff
    postponed = [e for e in world.store.entries() if e.route_id and e.status != DONE]
    assert sorted(e.last_error for e in postponed) == ["its route is backing off", "told to fail"]
    world.advance(6)
    await world.drain()
    assert sorted(n.pending_id for n in world.channel.sent[1:]) == ["p-1", "p-2"]
    assert all(e.status == DONE for e in world.store.entries() if e.route_id)


@pytest.mark.parametrize("hanging", BACKENDS, indirect=True)
async def test_the_running_worker_keeps_delivering_while_one_delivery_hangs(
    hanging: NotifyWorld,
) -> None:
    """#29 S2: ``run_forever`` claims and delivers what comes due while an earlier delivery
    still hangs (here well within its deadline), instead of waiting for it."""
    world = hanging
    world.route("", SLOW, events=(ANSWERABLE,))
    world.route("", FAST, events=(ANSWERABLE,))
    fast = "https://fast.example/hook"
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(world.worker.run_forever)
            world.ask("", pending_id="p-1")
            while (ANSWERABLE, "https://slow.example/hook") not in world.channel.events():
                await anyio.sleep(0.05)
            world.ask("", pending_id="p-2")
            while [n.pending_id for n in world.channel.sent if n.route.channel.target == fast] != [
                "p-1",
                "p-2",
            ]:
                await anyio.sleep(0.05)
            tasks.cancel_scope.cancel()


class ClockAdvancingChannel(FakeChannel):
    """Like :class:`FakeChannel`, but its first delivery takes ``seconds`` on the world's clock
    (a slow destination, seen by the entries waiting behind it) — once ``ready()`` says the
    entries that should wait behind it are there."""

    def __init__(
        self, clock: ManualClock, seconds: float, ready: Callable[[], bool] = lambda: True
    ) -> None:
        super().__init__()
        self._clock, self._seconds, self._ready = clock, seconds, ready

    async def deliver(self, notification: Notification) -> DeliveryOutcome:
        if not self.sent:
            with anyio.fail_after(30):
                while not self._ready():
                    await anyio.sleep(0.01)
            self._clock.set(self._clock.peek() + timedelta(seconds=self._seconds))
        return await super().deliver(notification)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_delivery_that_waited_past_its_lease_is_handed_out_again_later(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, notify_clock: ManualClock
) -> None:
    """#29 S2 and at-least-once: a delivery that waited behind its route's slow one until its
    lease could pass mid-attempt is not attempted (another worker may hold it by then); it is
    delivered once its lease has passed."""
    with storage_for(backend, request, tmp_path) as storage:
        # Its first delivery takes 200 s (beyond the 120 s lease) once both fan-outs handed
        # their deliveries on (#32: in the round that fans them out, concurrently).
        channel = ClockAdvancingChannel(
            notify_clock,
            200.0,
            lambda: len([e for e in world.store.entries() if e.route_id]) == 2,
        )
        world = notify_world(storage, notify_clock, {"webhook": channel})
        world.route("", FAST, events=(ANSWERABLE,))
        world.ask("", pending_id="p-1")
        world.ask("", pending_id="p-2")
        await world.worker.run_once()  # both fan-outs and, in the same round (#32), deliveries
        assert len(channel.sent) == 1
        waiting = [e for e in world.store.entries() if e.route_id and e.status != DONE]
        assert [e.attempts for e in waiting] == [0]
        await world.drain()  # the clock is past its lease by now: handed out again
        assert sorted(n.pending_id for n in channel.sent) == ["p-1", "p-2"]
        if storage.close_probe is not None:
            storage.close_probe()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("waits_for", ["its route", "a slot"])
@pytest.mark.parametrize("wait_s", [SHARED_READ_S / 2, SHARED_READ_S * 2])
async def test_a_delivery_that_waited_long_reads_its_bundle_anew(
    backend: str,
    waits_for: str,
    wait_s: float,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    notify_clock: ManualClock,
) -> None:
    """#32: entries handed out together share a read of their bundle for ``SHARED_READ_S``
    — a delivery that waited longer behind its route's earlier one, or for a free slot, reads
    the bundle again, so it sends the bundle as it is after the wait, as before reads were
    shared; one that waited less shares its fan-out's read."""
    with storage_for(backend, request, tmp_path) as storage:
        # The first delivery holds its route's lane and the one slot for ``wait_s``, once the
        # second waits for them.
        channel = ClockAdvancingChannel(
            notify_clock,
            wait_s,
            lambda: (
                worker._slots.statistics().tasks_waiting > 0
                or any(lane.statistics().tasks_waiting for lane in worker._lanes.values())
            ),
        )
        world = notify_world(storage, notify_clock, {"webhook": channel}, notify_concurrency=1)
        worker: Any = world.worker
        world.route("", FAST, events=(ANSWERABLE,))
        # Two routes of one bundle wait for the one slot; two bundles of one route for its lane.
        pending_ids = ["p-1"] if waits_for == "a slot" else ["p-1", "p-2"]
        if waits_for == "a slot":
            world.route("", "webhook:https://other.example/hook", events=(ANSWERABLE,))
        for pending_id in pending_ids:
            world.ask("", pending_id=pending_id)
        loads = count_bundle_loads(world)
        assert await world.worker.run_once() == len(pending_ids)  # fan-outs, then deliveries
        assert len(channel.sent) == 2
        # A fan-out's load serves its deliveries; one that waited long loads anew.
        again = [channel.sent[1].pending_id] if wait_s > SHARED_READ_S else []
        assert sorted(loads.keys) == sorted(pending_ids + again)
        if storage.close_probe is not None:
            storage.close_probe()
