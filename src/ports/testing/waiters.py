"""Contract suite for :class:`clarion.ports.Waiters` (upstream facts §3; fixes §9.21).

Subclass :class:`WaitersContract` and provide a ``waiters`` fixture returning a fresh, started
implementation. Agents register and wait on ``waiters``; answers are delivered through the
``responder`` fixture, which defaults to ``waiters`` itself. An implementation that spans
processes (for instance over PostgreSQL ``LISTEN/NOTIFY``) overrides ``responder`` with a
second instance on the same shared medium, so every clause below is also checked with the
waiter in one instance and the answer in another::

    class TestMyWaiters(WaitersContract):
        @pytest.fixture(name="waiters")
        async def fixture_waiters(self) -> AsyncIterator[Waiters]:
            async with start_my_waiters() as waiters:
                yield waiters

Every test is an anyio test; the suite never sleeps to synchronize. A waiting task is known to
be waiting as soon as :func:`start_waiting` returns (the port promises a task counts as waiting
from the first step of its ``wait`` call).
"""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import attrs
import pytest
from anyio.abc import TaskGroup

from clarion.domain.model import ANSWERED, Answer, Resolution
from clarion.ports.waiters import Delivery, DeliveryResult, WaitEnd, WaitEnded, Waiters

DELIVER_TIMEOUT_S = 30.0  # long, so that "at once" below cannot be the timeout expiring
WAIT_TIMEOUT_S = 30.0
PROMPT_S = 10.0  # the bound for anything the contract says happens at once


def sample_resolution(pending_id: str = "p1") -> Resolution:
    """A winner's resolution with a multi-select answer and custom text."""
    return Resolution(
        pending_id=pending_id,
        status=ANSWERED,
        answers=(
            Answer(question_id="q1", selected_options=("q1_opt1", "q1_opt2")),
            Answer(question_id="q2", custom_text="Ship it on Friday"),
        ),
        rejected=False,
        reject_reason="",
        responded_at=datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        claimed=True,
    )


class RecordingConfirm:
    """A ``confirm`` callback that counts its calls, can be held open and can fail."""

    def __init__(self, *, fail: bool = False, hold: bool = False) -> None:
        self.calls = 0
        self.finished = 0
        self.fail = fail
        self.started = anyio.Event()
        self.release = anyio.Event()
        if not hold:
            self.release.set()

    async def __call__(self) -> None:
        self.calls += 1
        self.started.set()
        await self.release.wait()
        self.finished += 1
        if self.fail:
            raise RuntimeError("finalize refused")


@attrs.define(eq=False)
class WaitOutcome:
    """How one waiting task ended; ``confirmed_before_return`` is the confirm's finished
    count when ``wait`` returned a resolution."""

    done: anyio.Event = attrs.field(factory=anyio.Event)
    scope: anyio.CancelScope = attrs.field(factory=anyio.CancelScope)
    resolution: Resolution | None = None
    ended: WaitEnded | None = None
    confirmed_before_return: int | None = None

    @property
    def reason(self) -> WaitEnd | None:
        return None if self.ended is None else self.ended.reason


async def start_waiting(
    tasks: TaskGroup,
    waiters: Waiters,
    pending_id: str,
    *,
    timeout: float = WAIT_TIMEOUT_S,
    confirm: RecordingConfirm | None = None,
) -> WaitOutcome:
    """Start a task waiting on ``pending_id``; returns once that task counts as waiting."""
    outcome = WaitOutcome()
    entered = anyio.Event()

    async def wait() -> None:
        with outcome.scope:
            entered.set()
            try:
                outcome.resolution = await waiters.wait(pending_id, timeout)
                if confirm is not None:
                    outcome.confirmed_before_return = confirm.finished
            except WaitEnded as ended:
                outcome.ended = ended
        outcome.done.set()

    tasks.start_soon(wait)
    await entered.wait()
    return outcome


async def deliver_in(
    tasks: TaskGroup,
    responder: Waiters,
    pending_id: str,
    confirm: RecordingConfirm,
    box: list[DeliveryResult],
    *,
    resolution: Resolution | None = None,
) -> None:
    """Start a delivery in the background; its result is appended to ``box``."""

    async def deliver() -> None:
        box.append(
            await responder.deliver(
                pending_id, resolution or sample_resolution(pending_id), confirm, DELIVER_TIMEOUT_S
            )
        )

    tasks.start_soon(deliver)


async def deliver_now(
    responder: Waiters, pending_id: str, confirm: RecordingConfirm
) -> DeliveryResult:
    """Deliver :func:`sample_resolution` for ``pending_id``; the call must return at once."""
    with anyio.fail_after(PROMPT_S):
        return await responder.deliver(
            pending_id, sample_resolution(pending_id), confirm, DELIVER_TIMEOUT_S
        )


async def finds_no_waiter(responder: Waiters, pending_id: str) -> None:
    """An answer for ``pending_id`` now finds no waiter, and nothing is confirmed (the answer
    goes the detached way)."""
    confirm = RecordingConfirm()
    result = await deliver_now(responder, pending_id, confirm)
    assert result.outcome is Delivery.NO_WAITER
    assert confirm.calls == 0


class WaitersContract:
    """Live delivery to blocked askers. Provide ``waiters``; optionally ``responder``."""

    pytestmark = pytest.mark.anyio

    @pytest.fixture(name="responder")
    def fixture_responder(self, waiters: Waiters) -> Waiters:
        return waiters

    # -- register and wait -----------------------------------------------------------------

    async def test_waiting_on_an_unknown_pending_id_ends_not_found(self, waiters: Waiters) -> None:
        with anyio.fail_after(PROMPT_S), pytest.raises(WaitEnded) as ended:
            await waiters.wait("unknown", WAIT_TIMEOUT_S)
        assert ended.value.reason is WaitEnd.NOT_FOUND
        assert ended.value.pending_id == "unknown"

    async def test_register_creates_one_entry_and_repeating_it_changes_nothing(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        assert not waiters.has_entry("p1")
        waiters.register("p1", "s1")
        waiters.register("p1", "s1")
        assert waiters.has_entry("p1")
        confirm = RecordingConfirm()
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, waiters, "p1", confirm=confirm)
            result = await deliver_now(responder, "p1", confirm)
        assert result.outcome is Delivery.DELIVERED
        assert outcome.resolution == sample_resolution()
        assert confirm.calls == 1
        assert not waiters.has_entry("p1")

    # -- delivery with durable confirmation ------------------------------------------------

    async def test_the_waiter_gets_the_resolution_only_after_confirm_succeeded(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        """Neither side returns before the durable confirmation has finished (R7a; §3)."""
        waiters.register("p1", "s1")
        confirm = RecordingConfirm(hold=True)
        results: list[DeliveryResult] = []
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, waiters, "p1", confirm=confirm)
            await deliver_in(tasks, responder, "p1", confirm, results)
            with anyio.fail_after(PROMPT_S):
                await confirm.started.wait()
            assert not outcome.done.is_set()
            assert results == []
            confirm.release.set()
        assert outcome.resolution == sample_resolution()
        assert outcome.confirmed_before_return == 1
        assert results == [DeliveryResult(Delivery.DELIVERED)]
        assert confirm.calls == 1

    async def test_every_waiter_on_an_entry_gets_the_resolution_and_confirm_runs_once(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        waiters.register("p1", "s1")
        confirm = RecordingConfirm()
        async with anyio.create_task_group() as tasks:
            outcomes = [
                await start_waiting(tasks, waiters, "p1", confirm=confirm) for _ in range(3)
            ]
            result = await deliver_now(responder, "p1", confirm)
        assert result.outcome is Delivery.DELIVERED
        assert [outcome.resolution for outcome in outcomes] == [sample_resolution()] * 3
        assert [outcome.confirmed_before_return for outcome in outcomes] == [1, 1, 1]
        assert confirm.calls == 1

    async def test_a_failing_confirm_ends_the_wait_delivery_failed_and_fails_the_delivery(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        waiters.register("p1", "s1")
        confirm = RecordingConfirm(fail=True)
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, waiters, "p1")
            result = await deliver_now(responder, "p1", confirm)
        assert result.outcome is Delivery.FAILED
        assert "finalize refused" in result.error
        assert outcome.reason is WaitEnd.DELIVERY_FAILED
        assert outcome.resolution is None
        assert confirm.calls == 1
        assert not waiters.has_entry("p1")

    async def test_a_started_confirm_finishes_even_when_the_waiters_caller_goes_away(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        """Once started, a confirmation owns its durable work (facts §3)."""
        waiters.register("p1", "s1")
        confirm = RecordingConfirm(hold=True)
        results: list[DeliveryResult] = []
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, waiters, "p1")
            await deliver_in(tasks, responder, "p1", confirm, results)
            with anyio.fail_after(PROMPT_S):
                await confirm.started.wait()
            outcome.scope.cancel()
            confirm.release.set()
        assert results == [DeliveryResult(Delivery.DELIVERED)]
        assert (confirm.calls, confirm.finished) == (1, 1)

    # -- nobody waiting: the detached path -------------------------------------------------

    async def test_delivery_for_an_unknown_pending_id_finds_no_waiter(
        self, responder: Waiters
    ) -> None:
        await finds_no_waiter(responder, "unknown")

    async def test_delivery_to_an_entry_nobody_waits_on_finds_no_waiter_and_removes_it(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        """The answer goes to the resume dispatcher, so no later wait may block for it."""
        waiters.register("p1", "s1")
        await finds_no_waiter(responder, "p1")
        assert not waiters.has_entry("p1")
        with anyio.fail_after(PROMPT_S), pytest.raises(WaitEnded) as ended:
            await waiters.wait("p1", WAIT_TIMEOUT_S)
        assert ended.value.reason is WaitEnd.NOT_FOUND

    async def test_when_the_only_waiters_caller_went_away_the_next_answer_finds_no_waiter_at_once(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        """Fixes upstream §9.21: no lingering entry makes the next answer block and fail."""
        waiters.register("p1", "s1")
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, waiters, "p1")
            outcome.scope.cancel()
        assert outcome.resolution is None
        assert not waiters.has_entry("p1")
        await finds_no_waiter(responder, "p1")

    async def test_a_waiter_that_leaves_does_not_take_the_entry_from_those_still_waiting(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        waiters.register("p1", "s1")
        confirm = RecordingConfirm()
        async with anyio.create_task_group() as tasks:
            leaving = await start_waiting(tasks, waiters, "p1")
            staying = await start_waiting(tasks, waiters, "p1", confirm=confirm)
            leaving.scope.cancel()
            with anyio.fail_after(PROMPT_S):
                await leaving.done.wait()
            assert waiters.has_entry("p1")
            result = await deliver_now(responder, "p1", confirm)
        assert result.outcome is Delivery.DELIVERED
        assert staying.resolution == sample_resolution()
        assert staying.confirmed_before_return == 1

    async def test_a_wait_that_times_out_ends_timeout_and_the_next_answer_finds_no_waiter(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        waiters.register("p1", "s1")
        with anyio.fail_after(PROMPT_S), pytest.raises(WaitEnded) as ended:
            await waiters.wait("p1", 0.05)
        assert ended.value.reason is WaitEnd.TIMEOUT
        await finds_no_waiter(responder, "p1")

    async def test_an_entry_is_delivered_at_most_once(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        waiters.register("p1", "s1")
        first, second = RecordingConfirm(), RecordingConfirm()
        async with anyio.create_task_group() as tasks:
            await start_waiting(tasks, waiters, "p1")
            won = await deliver_now(responder, "p1", first)
        again = await deliver_now(responder, "p1", second)
        assert won.outcome is Delivery.DELIVERED
        assert again.outcome is not Delivery.DELIVERED
        assert (first.calls, second.calls) == (1, 0)

    # -- cancel and cancel_session ---------------------------------------------------------

    async def test_cancel_ends_every_wait_cancelled_and_is_true_only_the_first_time(
        self, waiters: Waiters
    ) -> None:
        waiters.register("p1", "s1")
        async with anyio.create_task_group() as tasks:
            outcomes = [await start_waiting(tasks, waiters, "p1") for _ in range(2)]
            assert waiters.cancel("p1")
            assert not waiters.cancel("p1")
        assert [outcome.reason for outcome in outcomes] == [WaitEnd.CANCELLED] * 2
        assert not waiters.has_entry("p1")
        assert not waiters.cancel("unknown")

    async def test_an_answer_after_a_cancel_finds_no_waiter(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        waiters.register("p1", "s1")
        assert waiters.cancel("p1")
        await finds_no_waiter(responder, "p1")

    async def test_a_delivered_entry_can_no_longer_be_cancelled(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        waiters.register("p1", "s1")
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, waiters, "p1")
            await deliver_now(responder, "p1", RecordingConfirm())
        assert outcome.resolution == sample_resolution()
        assert not waiters.cancel("p1")

    async def test_cancel_session_releases_its_unresolved_waits_and_names_them(
        self, waiters: Waiters
    ) -> None:
        for pending_id, session_id in (("p1", "s1"), ("p2", "s1"), ("p3", "s2")):
            waiters.register(pending_id, session_id)
        async with anyio.create_task_group() as tasks:
            first = await start_waiting(tasks, waiters, "p1")
            second = await start_waiting(tasks, waiters, "p2")
            other = await start_waiting(tasks, waiters, "p3")
            assert sorted(waiters.cancel_session("s1")) == ["p1", "p2"]
            assert waiters.cancel_session("s1") == ()
            with anyio.fail_after(PROMPT_S):
                await first.done.wait()
                await second.done.wait()
            assert not other.done.is_set()
            assert waiters.has_entry("p3")
            assert waiters.cancel("p3")
        assert (first.reason, second.reason) == (WaitEnd.CANCELLED, WaitEnd.CANCELLED)
        assert not waiters.has_entry("p1")
        assert not waiters.has_entry("p2")

    async def test_cancel_session_lets_a_delivery_in_progress_finish_instead_of_cancelling_it(
        self, waiters: Waiters, responder: Waiters
    ) -> None:
        """Resolved entries are dropped without turning into cancellations (facts §3)."""
        waiters.register("p1", "s1")
        confirm = RecordingConfirm(hold=True)
        results: list[DeliveryResult] = []
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, waiters, "p1", confirm=confirm)
            await deliver_in(tasks, responder, "p1", confirm, results)
            with anyio.fail_after(PROMPT_S):
                await confirm.started.wait()
            assert waiters.cancel_session("s1") == ()
            confirm.release.set()
        assert outcome.resolution == sample_resolution()
        assert outcome.confirmed_before_return == 1
        assert results == [DeliveryResult(Delivery.DELIVERED)]
