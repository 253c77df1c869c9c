"""The in-memory Waiters adapter: delivery confirmation, cancel, cancel-by-session and the
§9.21 fix (upstream facts §3; §8.2 items 85–86)."""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import pytest

from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.domain.model import ANSWERED, Answer, Resolution
from clarion.ports.waiters import Delivery, DeliveryResult, WaitEnd, WaitEnded, Waiters

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


def test_in_memory_waiters_conform_to_the_port() -> None:
    conforming: Waiters = InMemoryWaiters()
    assert not conforming.has_entry("p1")


async def test_wait_without_an_entry_ends_not_found(waiters: InMemoryWaiters) -> None:
    with pytest.raises(WaitEnded) as ended:
        await waiters.wait("missing", 1)
    assert ended.value.reason is WaitEnd.NOT_FOUND
    assert ended.value.pending_id == "missing"


async def test_register_is_idempotent(waiters: InMemoryWaiters) -> None:
    waiters.register("p1", "s1")
    waiters.register("p1", "s1")
    assert waiters.has_entry("p1")
    assert len(waiters) == 1


async def test_waiter_receives_the_resolution_only_after_the_confirmation_ran(
    waiters: InMemoryWaiters,
) -> None:
    """Neither side returns before the durable confirmation (R7a; facts §3)."""
    waiters.register("p1", "s1")
    confirm = Recorder()
    confirm.release = anyio.Event()
    box: list[Resolution | WaitEnded] = []
    results: list[DeliveryResult] = []

    async def deliver() -> None:
        results.append(await waiters.deliver("p1", RESOLUTION, confirm, 5))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_wait_into, waiters, "p1", box)
        await _until_waiting(waiters, "p1")
        tasks.start_soon(deliver)
        await confirm.started.wait()
        assert box == []
        assert results == []
        confirm.release.set()
    assert box == [RESOLUTION]
    assert results == [DeliveryResult(Delivery.DELIVERED)]
    assert confirm.calls == 1
    assert not waiters.has_entry("p1")


async def test_failed_confirmation_fails_the_waiter_and_the_responder(
    waiters: InMemoryWaiters,
) -> None:
    waiters.register("p1", "s1")
    confirm = Recorder(fail=True)
    box: list[Resolution | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_wait_into, waiters, "p1", box)
        await _until_waiting(waiters, "p1")
        result = await waiters.deliver("p1", RESOLUTION, confirm, 5)
    assert result.outcome is Delivery.FAILED
    assert "finalize refused" in result.error
    assert isinstance(box[0], WaitEnded)
    assert box[0].reason is WaitEnd.DELIVERY_FAILED
    assert not waiters.has_entry("p1")


async def test_every_concurrent_waiter_receives_the_same_resolution_confirmed_once(
    waiters: InMemoryWaiters,
) -> None:
    waiters.register("p1", "s1")
    confirm = Recorder()
    box: list[Resolution | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        for _ in range(5):
            tasks.start_soon(_wait_into, waiters, "p1", box)
        await _until_waiting(waiters, "p1", 5)
        result = await waiters.deliver("p1", RESOLUTION, confirm, 5)
    assert result.outcome is Delivery.DELIVERED
    assert box == [RESOLUTION] * 5
    assert confirm.calls == 1


async def test_delivery_without_a_waiting_task_takes_the_detached_path_at_once(
    waiters: InMemoryWaiters,
) -> None:
    waiters.register("p1", "s1")
    confirm = Recorder()
    result = await waiters.deliver("p1", RESOLUTION, confirm, 5)
    assert result.outcome is Delivery.NO_WAITER
    assert confirm.calls == 0
    assert not waiters.has_entry("p1"), "a later wait must not block for an answer sent elsewhere"


async def test_delivery_without_an_entry_reports_no_waiter(waiters: InMemoryWaiters) -> None:
    result = await waiters.deliver("missing", RESOLUTION, Recorder(), 5)
    assert result.outcome is Delivery.NO_WAITER


async def test_abandoned_wait_removes_the_entry_so_the_next_answer_is_not_blocked(
    waiters: InMemoryWaiters,
) -> None:
    """Fixes §9.21: a caller that went away leaves no waiter behind."""
    waiters.register("p1", "s1")
    box: list[Resolution | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_wait_into, waiters, "p1", box)
        await _until_waiting(waiters, "p1")
        tasks.cancel_scope.cancel()
    assert box == []
    assert not waiters.has_entry("p1")
    with anyio.fail_after(1):
        result = await waiters.deliver("p1", RESOLUTION, Recorder(), 30)
    assert result.outcome is Delivery.NO_WAITER


async def test_abandoning_one_of_two_waits_keeps_the_entry_for_the_other(
    waiters: InMemoryWaiters,
) -> None:
    waiters.register("p1", "s1")
    box: list[Resolution | WaitEnded] = []
    async with anyio.create_task_group() as outer:
        outer.start_soon(_wait_into, waiters, "p1", box)
        async with anyio.create_task_group() as inner:
            inner.start_soon(_wait_into, waiters, "p1", [])
            await _until_waiting(waiters, "p1", 2)
            inner.cancel_scope.cancel()
        assert waiters.has_entry("p1")
        result = await waiters.deliver("p1", RESOLUTION, Recorder(), 5)
    assert result.outcome is Delivery.DELIVERED
    assert box == [RESOLUTION]


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


async def test_wait_timeout_ends_the_wait_and_removes_the_entry(waiters: InMemoryWaiters) -> None:
    waiters.register("p1", "s1")
    with pytest.raises(WaitEnded) as ended:
        await waiters.wait("p1", 0.01)
    assert ended.value.reason is WaitEnd.TIMEOUT
    assert not waiters.has_entry("p1")


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


async def test_cancel_ends_waits_once(waiters: InMemoryWaiters) -> None:
    waiters.register("p1", "s1")
    box: list[Resolution | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_wait_into, waiters, "p1", box)
        await _until_waiting(waiters, "p1")
        assert waiters.cancel("p1") is True
        assert waiters.cancel("p1") is False
    assert isinstance(box[0], WaitEnded)
    assert box[0].reason is WaitEnd.CANCELLED
    assert not waiters.has_entry("p1")


async def test_cancel_after_delivery_does_not_turn_the_answer_into_a_cancellation(
    waiters: InMemoryWaiters,
) -> None:
    waiters.register("p1", "s1")
    confirm = Recorder()
    confirm.release = anyio.Event()
    box: list[Resolution | WaitEnded] = []
    results: list[DeliveryResult] = []

    async def deliver() -> None:
        results.append(await waiters.deliver("p1", RESOLUTION, confirm, 5))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_wait_into, waiters, "p1", box)
        await _until_waiting(waiters, "p1")
        tasks.start_soon(deliver)
        await confirm.started.wait()
        assert waiters.cancel("p1") is False
        assert waiters.cancel_session("s1") == ()
        confirm.release.set()
    assert box == [RESOLUTION]
    assert results == [DeliveryResult(Delivery.DELIVERED)]


async def test_delivery_after_cancel_reports_no_waiter(waiters: InMemoryWaiters) -> None:
    waiters.register("p1", "s1")
    assert waiters.cancel("p1")
    result = await waiters.deliver("p1", RESOLUTION, Recorder(), 5)
    assert result.outcome is Delivery.NO_WAITER


async def test_cancel_session_cancels_only_that_sessions_entries(
    waiters: InMemoryWaiters,
) -> None:
    waiters.register("p1", "s1")
    waiters.register("p2", "s1")
    waiters.register("p3", "s2")
    box: list[Resolution | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_wait_into, waiters, "p1", box)
        await _until_waiting(waiters, "p1")
        assert waiters.cancel_session("s1") == ("p1", "p2")
    assert isinstance(box[0], WaitEnded)
    assert box[0].reason is WaitEnd.CANCELLED
    assert not waiters.has_entry("p1")
    assert not waiters.has_entry("p2")
    assert waiters.has_entry("p3")
    assert waiters.cancel_session("nobody") == ()


async def test_cancel_of_an_unknown_entry_is_false(waiters: InMemoryWaiters) -> None:
    assert waiters.cancel("missing") is False
