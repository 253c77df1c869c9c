"""The one Runner (issue #32): store calls run under its shared limiter and are waited for
when the caller is cancelled; outbound requests run outside that limiter and are not."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from clarion.app.usecases.runner import Runner
from clarion.ports.threads import Offload


def test_the_runner_is_the_offload_port() -> None:
    offload: Offload = Runner()  # mypy checks the structural match
    assert callable(offload)


@pytest.mark.anyio
async def test_a_store_call_holds_a_token_of_the_shared_limiter() -> None:
    runner = Runner(anyio.CapacityLimiter(1))
    assert await runner(lambda: runner.limiter.borrowed_tokens) == 1


@pytest.mark.anyio
async def test_an_outbound_request_does_not_wait_for_the_store_pool_nor_its_cancelled_caller() -> (
    None
):
    runner = Runner(anyio.CapacityLimiter(1))
    release = threading.Event()
    async with runner.limiter:  # every store thread is busy
        assert await runner.outbound(lambda: runner.limiter.borrowed_tokens) == 1
        with anyio.move_on_after(0.2) as scope:
            await runner.outbound(release.wait, 30)  # abandoned at the deadline
        assert scope.cancelled_caught
    release.set()


@pytest.mark.anyio
async def test_a_cancelled_caller_waits_for_its_store_call_to_finish() -> None:
    runner = Runner()
    finished = threading.Event()

    def write() -> None:
        anyio.from_thread.run_sync(scope.cancel)  # cancelled while the write runs
        time.sleep(0.1)
        finished.set()

    with anyio.CancelScope() as scope:
        await runner(write)
    assert finished.is_set()
