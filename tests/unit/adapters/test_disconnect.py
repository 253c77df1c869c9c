"""The one client-disconnect helper (issue #16): the work's result, or DISCONNECTED with the
work cancelled once the client has gone; the work's own failure raised as itself."""

from __future__ import annotations

import anyio
import pytest
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from clarion.adapters import disconnect
from clarion.adapters.disconnect import (
    DISCONNECTED,
    DisconnectSignal,
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


async def test_the_signal_tells_the_work_at_once_that_the_transport_saw_the_client_leave(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#35: under :class:`DisconnectSignal` a watched request is not asked every second: the
    ``http.disconnect`` its transport reads ends the work (the re-check is out of reach here)."""
    monkeypatch.setattr(disconnect, "SIGNALLED_RECHECK_S", 3600.0)
    left = anyio.Event()
    outcome: list[object] = []

    async def receive() -> Message:
        await left.wait()
        return {"type": "http.disconnect"}

    async def transport(scope: Scope, receive: Receive, _send: Send) -> None:
        """Stands for the SDK: starts the work, and reads ``receive`` until the client left."""
        request = Request(scope, receive)

        async def work() -> str:
            await anyio.sleep_forever()
            return "never"

        async with anyio.create_task_group() as tasks:

            async def watched() -> None:
                outcome.append(await until_disconnected(disconnect_polled(request, 3600), work))

            tasks.start_soon(watched)
            await anyio.wait_all_tasks_blocked()
            left.set()
            while (await receive())["type"] != "http.disconnect":
                pass

    async def send(_message: Message) -> None:
        raise AssertionError("nothing is sent")

    with anyio.fail_after(5):
        await DisconnectSignal(transport)({"type": "http", "headers": []}, receive, send)
    assert outcome == [DISCONNECTED]


async def test_a_signalled_request_is_still_asked_when_its_transport_stops_reading() -> None:
    """The signal never fires when nobody reads ``receive``: the slow re-check still notices."""
    scope: dict[str, object] = {"type": "http", "method": "POST", "headers": []}
    scope[disconnect.SIGNAL_KEY] = anyio.Event()

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    request = Request(scope, receive)

    async def work() -> str:
        await anyio.sleep_forever()
        return "never"

    with anyio.fail_after(5):
        assert await until_disconnected(disconnect_polled(request, 3600), work) is DISCONNECTED


async def test_the_signal_passes_every_message_on_unchanged() -> None:
    sent: list[Message] = [
        {"type": "http.request", "body": b"{}", "more_body": False},
        {"type": "http.disconnect"},
    ]
    messages = iter(sent)
    seen: list[Message] = []

    async def receive() -> Message:
        return next(messages)

    async def app(scope: Scope, receive: Receive, _send: Send) -> None:
        seen.append(await receive())
        assert not scope[disconnect.SIGNAL_KEY].is_set()
        seen.append(await receive())
        assert scope[disconnect.SIGNAL_KEY].is_set()

    async def send(_message: Message) -> None:
        raise AssertionError("nothing is sent")

    await DisconnectSignal(app)({"type": "http", "headers": []}, receive, send)
    assert [m["type"] for m in seen] == ["http.request", "http.disconnect"]
    assert seen[0]["body"] == b"{}"
