"""The one client-disconnect helper (issue #16): the work's result, or DISCONNECTED with the
work cancelled once the client has gone; the work's own failure raised as itself."""

from __future__ import annotations

import anyio
import pytest
from starlette.requests import Request
from starlette.types import Message, Receive

from clarion.adapters.disconnect import (
    DISCONNECTED,
    disconnect_message,
    disconnect_polled,
    until_disconnected,
)

pytestmark = pytest.mark.anyio


def _receive(gone: anyio.Event) -> tuple[Receive, list[str]]:
    seen: list[str] = []

    async def receive() -> Message:
        await gone.wait()
        seen.append("http.disconnect")
        return {"type": "http.disconnect"}

    return receive, seen


async def test_the_work_finishing_first_gives_its_result() -> None:
    receive, _ = _receive(anyio.Event())

    async def work() -> str:
        return "answered"

    with anyio.fail_after(5):
        assert await until_disconnected(disconnect_message(receive), work) == "answered"


async def test_a_disconnect_cancels_the_work() -> None:
    gone = anyio.Event()
    receive, seen = _receive(gone)
    cancelled = anyio.Event()

    async def work() -> str:
        gone.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    with anyio.fail_after(5):
        assert await until_disconnected(disconnect_message(receive), work) is DISCONNECTED
    assert cancelled.is_set()
    assert seen == ["http.disconnect"]


async def test_the_works_failure_is_raised_unwrapped() -> None:
    receive, _ = _receive(anyio.Event())

    async def work() -> str:
        raise LookupError("not found")

    with anyio.fail_after(5), pytest.raises(LookupError, match="not found"):
        await until_disconnected(disconnect_message(receive), work)


async def test_polling_notices_a_request_whose_client_went_away() -> None:
    """The MCP surface's detector: ``Request.is_disconnected`` asked until it is true."""
    answers = iter([{"type": "http.request", "body": b"", "more_body": False}])

    async def receive() -> Message:
        return next(answers, {"type": "http.disconnect"})

    request = Request({"type": "http", "method": "POST", "headers": []}, receive)
    await request.body()  # the transport reads the body; only the disconnect is left

    async def work() -> str:
        await anyio.sleep_forever()
        return "never"

    with anyio.fail_after(5):
        assert await until_disconnected(disconnect_polled(request, 0.01), work) is DISCONNECTED
