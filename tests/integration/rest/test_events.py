"""``GET /api/v1/events``: server-sent events filtered by the caller's visibility, heartbeat
comments, and a clean end on disconnect and on shutdown."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import attrs
import httpx2
import pytest
import uvicorn
from anyio.abc import ObjectReceiveStream
from starlette.applications import Starlette
from starlette.types import Message, Scope

from clarion.adapters.rest.events import event_frame
from clarion.domain.model import Identity
from clarion.ports.events import Event
from tests.integration.rest.harness import Headers, RestWorld, aask, asetup_caller, async_client


@attrs.define
class Stream:
    """One open event stream, read frame by frame."""

    messages: ObjectReceiveStream[Message]
    start: Message | None = None
    buffer: str = ""
    ended: bool = False

    async def frame(self) -> str:
        """The next SSE frame (event or comment), or "" once the response has ended."""
        while "\n\n" not in self.buffer:
            if self.ended:
                return ""
            message = await self.messages.receive()
            if message["type"] == "http.response.start":
                self.start = message
                continue
            self.buffer += message.get("body", b"").decode()
            self.ended = not message.get("more_body", False)
        frame, _, self.buffer = self.buffer.partition("\n\n")
        return frame

    async def event(self) -> tuple[str, dict[str, Any]]:
        """The next event frame, skipping comments."""
        while True:
            frame = await self.frame()
            assert frame, "the stream ended"
            if not frame.startswith(":"):
                kind_line, data_line = frame.split("\n")
                payload = json.loads(data_line.removeprefix("data: "))
                assert isinstance(payload, dict)
                return kind_line.removeprefix("event: "), payload


@asynccontextmanager
async def open_stream(
    app: Starlette, headers: Headers
) -> AsyncIterator[tuple[Stream, anyio.Event]]:
    """Call the ASGI app directly (an endless response cannot go through a buffering client);
    yields the stream and an event that, once set, disconnects the client."""
    disconnect = anyio.Event()
    sink, source = anyio.create_memory_object_stream[Message](100)
    first = True

    async def receive() -> Message:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": b"", "more_body": False}
        await disconnect.wait()
        return {"type": "http.disconnect"}

    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/api/v1/events",
        "raw_path": b"/api/v1/events",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8765")]
        + [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50001),
        "server": ("testserver", 80),
    }

    async def serve() -> None:
        async with sink:
            await app(scope, receive, sink.send)

    async with source, anyio.create_task_group() as group:
        group.start_soon(serve)
        yield Stream(messages=source), disconnect
        disconnect.set()


@pytest.mark.anyio
async def test_each_caller_receives_only_events_of_tasks_it_may_see(auth_enabled: bool) -> None:
    world = RestWorld.build(auth_enabled=auth_enabled)
    async with async_client(world.app) as client:
        alice = await asetup_caller(client, world, "alice")
        bob = await asetup_caller(client, world, "bob")
        with anyio.fail_after(5):
            async with open_stream(world.app, bob.headers) as (stream, _):
                assert await stream.frame() == ": connected"
                assert stream.start is not None
                assert stream.start["status"] == 200
                headers = dict(stream.start["headers"])
                assert headers[b"content-type"].startswith(b"text/event-stream")
                assert headers[b"cache-control"] == b"no-cache"
                alices = await aask(client, alice)
                bobs = await aask(client, bob)
                kind, payload = await stream.event()
                assert kind == "bundle.created"
                assert set(payload) == {"kind", "task_id", "session_id", "pending_id", "data"}
                # Alice asked first: a leak would put her event ahead of bob's own.
                expected = bobs if world.auth_enabled else alices
                assert payload["pending_id"] == expected


@pytest.mark.anyio
async def test_a_quiet_stream_sends_heartbeat_comments() -> None:
    world = RestWorld.build(auth_enabled=False, heartbeat_s=0.01)
    with anyio.fail_after(5):
        async with open_stream(world.app, {}) as (stream, _):
            assert await stream.frame() == ": connected"
            assert await stream.frame() == ": heartbeat"


def _published(number: int) -> Event:
    return Event(kind="bundle.resolved", task_id="t1", session_id="s1", pending_id=f"p{number}")


@pytest.mark.anyio
async def test_events_published_together_are_written_in_one_body_message() -> None:
    """Issue #35: a burst of events costs the stream one write through the HTTP layers, not
    one per event, and still every frame, in order."""
    world = RestWorld.build(auth_enabled=False)
    with anyio.fail_after(5):
        async with open_stream(world.app, {}) as (stream, _):
            assert await stream.frame() == ": connected"
            for number in range(3):
                world.bus.publish(_published(number))
            message = await stream.messages.receive()
            body = message["body"].decode()
            assert body == "".join(event_frame(_published(n)).decode() for n in range(3))


@pytest.mark.anyio
async def test_a_burst_larger_than_the_streams_buffer_arrives_whole_and_in_order() -> None:
    """More events at once than the stream holds between its subscription and its response
    (256): the subscription waits for room instead of dropping, and the client gets them all
    in publish order."""
    world = RestWorld.build(auth_enabled=False)
    with anyio.fail_after(10):
        async with open_stream(world.app, {}) as (stream, _):
            assert await stream.frame() == ": connected"
            for number in range(700):
                world.bus.publish(_published(number))
            received = [(await stream.event())[1]["pending_id"] for _ in range(700)]
    assert received == [f"p{n}" for n in range(700)]


@pytest.mark.anyio
async def test_a_heartbeat_comes_only_after_a_quiet_heartbeat_interval() -> None:
    world = RestWorld.build(auth_enabled=False, heartbeat_s=0.3)
    with anyio.fail_after(5):
        async with open_stream(world.app, {}) as (stream, _):
            assert await stream.frame() == ": connected"
            started = anyio.current_time()
            for number in range(4):
                await anyio.sleep(0.1)
                world.bus.publish(_published(number))
                assert (await stream.event())[1]["pending_id"] == f"p{number}"
            assert await stream.frame() == ": heartbeat"
            # Events kept the stream busy for 0.4 s: no heartbeat before the last one plus 0.3 s.
            assert anyio.current_time() - started >= 0.4 + 0.3 - 0.05


@pytest.mark.anyio
async def test_a_client_disconnect_ends_the_stream_and_releases_the_subscription() -> None:
    world = RestWorld.build(auth_enabled=False)
    with anyio.fail_after(5):
        async with open_stream(world.app, {}) as (stream, disconnect):
            assert await stream.frame() == ": connected"
            assert world.bus.subscriber_count == 1
            disconnect.set()
        assert world.bus.subscriber_count == 0


@pytest.mark.anyio
async def test_closing_the_stream_endpoint_finishes_open_responses_cleanly() -> None:
    world = RestWorld.build(auth_enabled=False)
    with anyio.fail_after(5):
        async with open_stream(world.app, {}) as (stream, _):
            assert await stream.frame() == ": connected"
            world.app.state.rest.events.close()
            assert await stream.frame() == ""
            assert stream.ended
        assert world.bus.subscriber_count == 0


@pytest.mark.anyio
async def test_a_head_request_gets_the_headers_alone_and_holds_no_stream() -> None:
    """Issue #16 (sse-starlette): HEAD never opens a stream, and its admission against the
    per-identity cap is released."""
    world = RestWorld.build(auth_enabled=True)
    async with async_client(world.app) as client:
        alice = await asetup_caller(client, world, "alice")
        with anyio.fail_after(5):
            response = await client.head("/api/v1/events", headers=alice.headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    assert response.content == b""
    assert world.app.state.rest.events.open_streams(Identity.user(alice.user_id)) == 0
    assert world.bus.subscriber_count == 0


@pytest.mark.server
@pytest.mark.anyio
async def test_over_a_real_socket_the_stream_flows_without_a_content_length() -> None:
    """uvicorn in-process on a free port: headers, the first frame, a live event, and a clean
    end when the client hangs up."""
    world = RestWorld.build(auth_enabled=True)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # accepting starts with serve(); connections queue until then
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(world.app, log_config=None, lifespan="off"))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [listener])
            try:
                async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                    alice = await asetup_caller(client, world, "alice")
                    async with client.stream(
                        "GET", "/api/v1/events", headers=alice.headers
                    ) as response:
                        assert response.status_code == 200
                        assert "content-length" not in response.headers
                        assert response.headers["content-type"].startswith("text/event-stream")
                        lines = response.aiter_lines()
                        assert await anext(lines) == ": connected"
                        pending_id = await aask(client, alice)
                        seen = [await anext(lines) for _ in range(3)]
                        assert seen[:2] == ["", "event: bundle.created"]
                        assert (
                            json.loads(seen[2].removeprefix("data: "))["pending_id"] == pending_id
                        )
            finally:
                server.should_exit = True
    assert world.bus.subscriber_count == 0
