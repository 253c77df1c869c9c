"""The request-body deadline as pure ASGI (issue #29 S1): a body that stops arriving is
answered 408 with ``Connection: close`` and the application is told the client left; a body
that arrives, and a request without one, pass through untouched."""

from __future__ import annotations

import json

import anyio
import pytest
from starlette.types import Message, Receive, Scope, Send

from clarion.adapters.body_deadline import BodyDeadline, timed_out_message

pytestmark = pytest.mark.anyio

TIMEOUT_S = 0.05


def _scope(headers: list[tuple[bytes, bytes]]) -> Scope:
    return {"type": "http", "method": "POST", "path": "/x", "headers": headers}


WITH_BODY = [(b"content-length", b"100"), (b"content-type", b"application/json")]


class _Client:
    """A client whose body chunks are released by the test; ``stall`` after them."""

    def __init__(self, chunks: list[Message]) -> None:
        self.chunks = list(chunks)
        self.sent: list[Message] = []

    async def receive(self) -> Message:
        if self.chunks:
            return self.chunks.pop(0)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(self, message: Message) -> None:
        self.sent.append(message)


async def test_a_stalled_body_is_answered_408_and_the_application_told_the_client_left() -> None:
    client = _Client([{"type": "http.request", "body": b"{", "more_body": True}])
    seen: list[Message] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            seen.append(message)
            if message["type"] == "http.disconnect":
                # What a framework does when the client vanished mid-body: fail, or answer.
                await send({"type": "http.response.start", "status": 400, "headers": []})
                await send({"type": "http.response.body", "body": b"late"})
                raise RuntimeError("client disconnected")

    await BodyDeadline(app, timeout_s=TIMEOUT_S)(_scope(WITH_BODY), client.receive, client.send)
    assert [message["type"] for message in seen] == ["http.request", "http.disconnect"]
    start, body = client.sent  # the application's own answer is discarded
    assert start["status"] == 408
    assert (b"connection", b"close") in start["headers"]
    assert json.loads(body["body"]) == {"error": timed_out_message(TIMEOUT_S)}
    assert "CLARION_BODY_TIMEOUT_S" in timed_out_message(TIMEOUT_S)


async def test_a_body_that_arrives_passes_and_later_receives_are_not_timed() -> None:
    """Once the body is in, a receive may wait as long as it likes (an MCP call waiting for
    its answer listens for the client leaving)."""
    disconnect_after = anyio.Event()

    async def receive() -> Message:
        if not chunks:
            await disconnect_after.wait()
            return {"type": "http.disconnect"}
        return chunks.pop(0)

    chunks: list[Message] = [
        {"type": "http.request", "body": b"{", "more_body": True},
        {"type": "http.request", "body": b"}", "more_body": False},
    ]
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_release_later, disconnect_after)
            assert (await receive())["type"] == "http.disconnect"
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    await BodyDeadline(app, timeout_s=TIMEOUT_S)(_scope(WITH_BODY), receive, send)
    assert [message.get("status") for message in sent] == [200, None]
    assert sent[1]["body"] == b"{}"


async def _release_later(event: anyio.Event) -> None:
    await anyio.sleep(TIMEOUT_S * 4)  # longer than the deadline
    event.set()


async def test_a_request_without_a_body_is_not_wrapped() -> None:
    """An event stream or a wait: nothing to time."""
    client = _Client([])
    received: list[Receive] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        received.append(receive)

    middleware = BodyDeadline(app, timeout_s=TIMEOUT_S)
    await middleware(_scope([(b"content-length", b"0")]), client.receive, client.send)
    await middleware(_scope([]), client.receive, client.send)
    assert received == [client.receive, client.receive]
    assert client.sent == []


def test_the_timeout_must_be_positive() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        return None

    with pytest.raises(ValueError, match="positive"):
        BodyDeadline(app, timeout_s=0)
