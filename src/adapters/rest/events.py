"""``GET /api/v1/events``: server-sent events of message and bundle updates.

Each :class:`~clarion.ports.Event` the caller may see is sent as::

    event: <kind>
    data: {"kind", "task_id", "session_id", "pending_id", "data"}

Visibility is the task rule every other read uses: an event is sent only when the caller may
see its task (unscoped callers see every event). A comment line (``: heartbeat``) is sent
every ``heartbeat_s`` seconds so proxies keep the connection and clients notice a dead one.
The stream ends cleanly — the subscription is closed and the response finished — when the
client disconnects, when the event source ends, or when :meth:`EventStream.close` is called
(the composition root calls it on shutdown, before the server waits for open connections).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import anyio
import structlog
from anyio.abc import ObjectSendStream
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from clarion.adapters.rest.auth import require_identity
from clarion.adapters.rest.errors import Resource, guarded
from clarion.domain.model import Identity
from clarion.ports.events import Event, EventSource

log = structlog.get_logger(__name__)

EVENTS_PATH: Final = "/api/v1/events"
CanSee = Callable[[Identity, str], Awaitable[bool]]
_BUFFER: Final = 256


def event_frame(event: Event) -> bytes:
    """One SSE frame for ``event`` (the kind is the SSE event name)."""
    payload = {
        "kind": event.kind,
        "task_id": event.task_id,
        "session_id": event.session_id,
        "pending_id": event.pending_id,
        "data": dict(event.data),
    }
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    return f"event: {event.kind}\ndata: {data}\n\n".encode()


class _EventStreamResponse(Response):
    """An endless ``text/event-stream`` body (no ``Content-Length``), written by ``run``."""

    def __init__(self, run: Callable[[Send], Awaitable[None]]) -> None:
        # Response.__init__ would render an empty body and announce Content-Length: 0.
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        self._run = run

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        disconnected = False
        async with anyio.create_task_group() as group:

            async def watch_disconnect() -> None:
                nonlocal disconnected
                while (await receive())["type"] != "http.disconnect":
                    pass
                disconnected = True
                group.cancel_scope.cancel()

            group.start_soon(watch_disconnect)
            try:
                await self._run(send)
            finally:
                group.cancel_scope.cancel()
        if not disconnected:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class EventStream:
    """The event-stream endpoint; one instance per application."""

    def __init__(self, source: EventSource, can_see: CanSee, *, heartbeat_s: float = 15.0) -> None:
        self._source = source
        self._can_see = can_see
        self._heartbeat_s = heartbeat_s
        self._closed = anyio.Event()

    def close(self) -> None:
        """End every open stream; a stream opened afterwards ends at once."""
        self._closed.set()

    async def _pump(self, identity: Identity, sink: ObjectSendStream[Event]) -> None:
        visible: dict[str, bool] = {}
        subscription: AsyncIterator[Event] = self._source.subscribe()
        try:
            async with sink:
                async for event in subscription:
                    if event.task_id not in visible:
                        visible[event.task_id] = await self._can_see(identity, event.task_id)
                    if visible[event.task_id]:
                        await sink.send(event)
        finally:
            close: Any = getattr(subscription, "aclose", None)
            if close is not None:
                with anyio.CancelScope(shield=True):
                    await close()

    async def _serve(self, identity: Identity, send: Send) -> None:
        sink, events = anyio.create_memory_object_stream[Event](_BUFFER)
        # Both ends are closed here whatever happens; the pump also closes its end when the
        # source runs dry, which is how the loop below learns the stream is over.
        with sink, events:
            async with anyio.create_task_group() as group:
                group.start_soon(self._pump, identity, sink)

                async def watch_close() -> None:
                    await self._closed.wait()
                    group.cancel_scope.cancel()

                group.start_soon(watch_close)
                await send(
                    {"type": "http.response.body", "body": b": connected\n\n", "more_body": True}
                )
                while True:
                    with anyio.move_on_after(self._heartbeat_s) as idle:
                        try:
                            event = await events.receive()
                        except anyio.EndOfStream:
                            break
                    frame = b": heartbeat\n\n" if idle.cancelled_caught else event_frame(event)
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
                group.cancel_scope.cancel()

    @property
    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        @guarded(Resource.NONE)
        async def events(request: Request) -> Response:
            identity = require_identity(request)
            return _EventStreamResponse(lambda send: self._serve(identity, send))

        return events
