"""What only the in-memory Waiters adapter promises, beyond the port's contract (which
``tests/contract/test_waiters_contracts.py`` runs on it): a waiter cancelled before it consumes
a delivery, the responder's deadline and the grace period for a started confirmation
(upstream facts §3; §8.2 items 85–86)."""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import pytest

from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.domain.model import ANSWERED, Answer, Resolution
from clarion.ports.waiters import Delivery, WaitEnd, WaitEnded, Waiters

pytestmark = pytest.mark.anyio

RESOLUTION = Resolution(
    pending_id="p1",
    status=ANSWERED,
    answers=(Answer(question_id="q1", selected_options=("q1_opt1", "q1_opt2")),),
    rejected=False,
    reject_reason="",
    responded_at=datetime(2026, 1, 1, tzinfo=UTC),
    claimed=True,
)


class Recorder:
    """A confirm callback that records its calls and can be told to fail or to hold."""

    def __init__(self, *, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail
        self.started = anyio.Event()
        self.release: anyio.Event | None = None

    async def __call__(self) -> None:
        self.calls += 1
        self.started.set()
        if self.release is not None:
            await self.release.wait()
        if self.fail:
            raise RuntimeError("finalize refused")


@pytest.fixture(name="waiters")
def fixture_waiters() -> InMemoryWaiters:
    return InMemoryWaiters()


async def _wait_into(
    waiters: Waiters, pending_id: str, box: list[Resolution | WaitEnded], timeout: float = 5
) -> None:
    try:
        box.append(await waiters.wait(pending_id, timeout))
    except WaitEnded as ended:
        box.append(ended)


async def _until_waiting(waiters: InMemoryWaiters, pending_id: str, count: int = 1) -> None:
    """Yield until ``count`` tasks wait on the entry (they count before their first yield)."""
    while waiters.waiting(pending_id) < count:
        await anyio.lowlevel.checkpoint()


async def test_waiter_cancelled_before_consuming_a_delivery_hands_it_to_the_detached_path(
    waiters: InMemoryWaiters,
) -> None:
    waiters.register("p1", "s1")
    confirm = Recorder()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_wait_into, waiters, "p1", [])
        await _until_waiting(waiters, "p1")
        tasks.cancel_scope.cancel()  # the waiter sees this before it can consume the answer
        with anyio.CancelScope(shield=True):
            result = await waiters.deliver("p1", RESOLUTION, confirm, 5)
    assert result.outcome is Delivery.NO_WAITER
    assert confirm.calls == 0


async def test_unconsumed_delivery_is_abandoned_after_the_responder_timeout(
    waiters: InMemoryWaiters,
) -> None:
    """A waiter that does not get to run within the responder's deadline gets the abandoned
    error, never the answer (facts §3 ``deliveryAbandoned``)."""
    waiters.register("p1", "s1")
    entry = waiters._entries["p1"]
    entry.waiting += 1  # a waiter that counted itself but is starved of the event loop
    confirm = Recorder()
    result = await waiters.deliver("p1", RESOLUTION, confirm, 0.01)
    assert result.outcome is Delivery.FAILED
    assert confirm.calls == 0
    with pytest.raises(WaitEnded) as ended:
        await waiters._consume(entry)  # the starved waiter finally runs
    assert ended.value.reason is WaitEnd.DELIVERY_FAILED
    assert confirm.calls == 0


async def test_started_confirmation_is_awaited_past_the_responder_deadline(
    waiters: InMemoryWaiters,
) -> None:
    waiters.register("p1", "s1")

    async def slow_confirm() -> None:
        await anyio.sleep(0.05)  # a durable write slower than the responder's 10 ms deadline

    box: list[Resolution | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_wait_into, waiters, "p1", box)
        await _until_waiting(waiters, "p1")
        result = await waiters.deliver("p1", RESOLUTION, slow_confirm, 0.01)
    assert result.outcome is Delivery.DELIVERED
    assert box == [RESOLUTION]


async def test_started_confirmation_is_awaited_only_up_to_the_grace_period() -> None:
    waiters = InMemoryWaiters(started_confirmation_grace=0.02)
    waiters.register("p1", "s1")
    confirm = Recorder()
    confirm.release = anyio.Event()
    box: list[Resolution | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_wait_into, waiters, "p1", box)
        await _until_waiting(waiters, "p1")
        result = await waiters.deliver("p1", RESOLUTION, confirm, 0.01)
        assert result.outcome is Delivery.FAILED
        assert confirm.calls == 1
        confirm.release.set()
    assert box == [RESOLUTION], "the confirmation that did finish still hands over the answer"
