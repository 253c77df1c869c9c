"""``GET /api/v1/events``: server-sent events of message and bundle updates.

Each :class:`~clarion.ports.Event` the caller may see is sent as::

    event: <kind>
    data: {"kind", "task_id", "session_id", "pending_id", "data"}

Visibility is the task rule every other read uses: an event is sent only when the caller may
see its task (unscoped callers see every event). It is computed once per identity and task per
heartbeat interval and shared by all of that identity's streams, so many streams of one user
cost one authorization per event, not one per stream. At most ``max_streams`` streams per
identity (``CLARION_MAX_EVENT_STREAMS``); the next is refused with 429. A stream opened with a
token or a browser session ends within one heartbeat after that credential is revoked, logged
out or expires. A comment line (``: heartbeat``) is sent
every ``heartbeat_s`` seconds so proxies keep the connection and clients notice a dead one.
The stream ends cleanly — the subscription is closed and the response finished — when the
client disconnects, when the event source ends, or when :meth:`EventStream.close` is called
(the composition root calls it on shutdown, before the server waits for open connections).

The response is ``sse-starlette``'s :class:`~sse_starlette.EventSourceResponse`: it writes the
frames a producer task hands it — every frame waiting at once, so a burst of events costs one
write through the HTTP layers, not one per event (#35) — watches for the client's disconnect
(then cancels the producer) and answers ``HEAD`` with the headers alone. Its own pings are
off: the heartbeat is sent only when the stream was quiet for ``heartbeat_s``. On the server's
exit signal it would cancel the response at once, racing :meth:`EventStream.close` (which the
same signal triggers in ``clarion serve``) and, when it won, leaving the response unfinished
(uvicorn logs "ASGI callable returned without completing response"); a short grace lets the
close end the stream with its final chunk first.
"""

from __future__ import annotations

import collections
import functools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import anyio
import attrs
import structlog
from anyio.streams.memory import MemoryObjectSendStream
from sse_starlette import EventSourceResponse
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response

from clarion.adapters.rest.auth import Credential, auth_context, require_identity
from clarion.adapters.revocation import RevocationWatch
from clarion.domain.errors import LimitExceeded
from clarion.domain.model import Identity
from clarion.ports.events import Event, EventSource
from clarion.ports.threads import Offload

log = structlog.get_logger(__name__)

CanSee = Callable[[Identity, str], Awaitable[bool]]
_BUFFER: Final = 256
DEFAULT_MAX_STREAMS: Final = 16
_PRUNE_AT: Final = 1024  # cached visibility results kept before expired ones go


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


class RecentFrames:
    """The frame of each recent event, encoded once however many streams send it (#35): the
    fan-out hands every subscription the same :class:`Event` object, so with E streams open
    each event was encoded E times. Keyed by the object's identity (an event holds a dict, so
    it is not hashable), the event kept alongside so an id reused after it is gone never
    matches. Used from the event loop only."""

    def __init__(self, size: int = _BUFFER) -> None:
        self._size = size
        self._recent: collections.OrderedDict[int, tuple[Event, bytes]] = collections.OrderedDict()

    def frame(self, event: Event) -> bytes:
        known = self._recent.get(id(event))
        if known is not None and known[0] is event:
            return known[1]
        encoded = event_frame(event)
        self._recent[id(event)] = (event, encoded)
        if len(self._recent) > self._size:
            self._recent.popitem(last=False)
        return encoded


CONNECTED: Final = b": connected\n\n"
HEARTBEAT: Final = b": heartbeat\n\n"
# The stream's headers besides text/event-stream; charset=utf-8 (sse-starlette adds
# X-Accel-Buffering: no and Connection: keep-alive).
_HEADERS: Final = {"Cache-Control": "no-cache"}
# How long a stream may take to end by itself once the server's exit signal came (see above).
_EXIT_GRACE_S: Final = 1.0


@attrs.define
class _Quiet:
    """When the stream last sent a frame (``time.monotonic()``), for its heartbeat."""

    since: float


@attrs.define
class _Viewer:
    """One identity's open streams and what it may see, shared by all of them: each task's
    visibility is computed once per heartbeat interval for the identity, not once per stream."""

    streams: int = 0
    visible: dict[str, tuple[float, bool]] = attrs.Factory(dict)
    computing: dict[str, anyio.Event] = attrs.Factory(dict)


class EventStream:
    """The event-stream endpoint; one instance per application.

    At most ``max_streams`` streams are open per identity (``CLARION_MAX_EVENT_STREAMS``);
    the next gets 429. A stream opened with a credential (token or browser session) re-checks
    it every half heartbeat (one check per credential, shared by its streams) and ends within
    one heartbeat once it is revoked, logged out or expired.
    """

    def __init__(
        self,
        source: EventSource,
        can_see: CanSee,
        *,
        heartbeat_s: float = 15.0,
        max_streams: int = DEFAULT_MAX_STREAMS,
        offload: Offload,
    ) -> None:
        self._source = source
        self._can_see = can_see
        self._heartbeat_s = heartbeat_s
        self._max_streams = max_streams
        self._offload = offload
        self._closed = anyio.Event()
        self._viewers: dict[str, _Viewer] = {}
        # One re-check per credential per half heartbeat, shared by its streams (issue #29).
        self._checks = RevocationWatch(interval=heartbeat_s / 2)
        self._frames = RecentFrames()

    def close(self) -> None:
        """End every open stream; a stream opened afterwards ends at once."""
        self._closed.set()

    def open_streams(self, identity: Identity) -> int:
        """How many streams ``identity`` has open."""
        viewer = self._viewers.get(_viewer_key(identity))
        return viewer.streams if viewer is not None else 0

    def _admit(self, identity: Identity) -> _Viewer:
        key = _viewer_key(identity)
        viewer = self._viewers.setdefault(key, _Viewer())
        if viewer.streams >= self._max_streams:
            raise LimitExceeded(
                f"too many event streams: the limit is {self._max_streams} per identity "
                "(CLARION_MAX_EVENT_STREAMS)",
                limit="CLARION_MAX_EVENT_STREAMS",
            )
        viewer.streams += 1
        return viewer

    def _release(self, identity: Identity, viewer: _Viewer) -> None:
        viewer.streams -= 1
        key = _viewer_key(identity)
        if viewer.streams <= 0 and self._viewers.get(key) is viewer:
            del self._viewers[key]

    def _admission(self, identity: Identity) -> tuple[_Viewer, Callable[[], None]]:
        """Admit one stream of ``identity`` (or raise ``LimitExceeded``); the returned
        release may be called any number of times and releases once."""
        viewer = self._admit(identity)
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._release(identity, viewer)

        return viewer, release

    async def _sees(self, viewer: _Viewer, identity: Identity, task_id: str) -> bool:
        """Whether ``identity`` may see ``task_id``, computed once for all its streams."""
        while True:
            cached = viewer.visible.get(task_id)
            if cached is not None and anyio.current_time() - cached[0] < self._heartbeat_s:
                return cached[1]
            running = viewer.computing.get(task_id)
            if running is None:
                break
            await running.wait()
        done = viewer.computing[task_id] = anyio.Event()
        try:
            result = await self._can_see(identity, task_id)
            now = anyio.current_time()
            if len(viewer.visible) >= _PRUNE_AT:
                fresh = {k: v for k, v in viewer.visible.items() if now - v[0] < self._heartbeat_s}
                viewer.visible = fresh
            viewer.visible[task_id] = (now, result)
            return result
        finally:
            del viewer.computing[task_id]
            done.set()

    async def _pump(
        self,
        viewer: _Viewer,
        identity: Identity,
        subscription: AsyncIterator[Event],
        frames: MemoryObjectSendStream[bytes],
        quiet: _Quiet,
    ) -> None:
        """Hand the frame of every event ``identity`` may see to ``frames`` until
        ``subscription`` ends. A frame is handed over without yielding while there is room
        (#35): the events a burst published together all reach the response before it
        writes, and it writes them at once."""
        async for event in subscription:
            if await self._sees(viewer, identity, event.task_id):
                frame = self._frames.frame(event)
                try:
                    frames.send_nowait(frame)
                except anyio.WouldBlock:
                    await frames.send(frame)
                quiet.since = time.monotonic()

    async def _heartbeat(self, frames: MemoryObjectSendStream[bytes], quiet: _Quiet) -> None:
        """A heartbeat comment whenever no frame went out for ``heartbeat_s``."""
        while True:
            due = quiet.since + self._heartbeat_s - time.monotonic()
            if due > 0:
                await anyio.sleep(due)
                continue
            await frames.send(HEARTBEAT)
            quiet.since = time.monotonic()

    async def _watch_credential(self, credential: Credential, scope: anyio.CancelScope) -> None:
        # Every half heartbeat, with results shared for at most half a heartbeat: a revoked
        # credential is seen, and its streams end, within one heartbeat.
        while True:
            await anyio.sleep(self._heartbeat_s / 2)
            check = functools.partial(self._offload, credential.still_valid)
            if not await self._checks.still_valid(credential.key, check):
                scope.cancel()
                return

    async def _serve(
        self,
        viewer: _Viewer,
        identity: Identity,
        credential: Credential | None,
        frames: MemoryObjectSendStream[bytes],
        release: Callable[[], None],
    ) -> None:
        """Write the stream's frames to ``frames`` until it ends, then close it (the response
        then finishes); cancelled when the client disconnects."""
        quiet = _Quiet(time.monotonic())
        # Subscribed before the client is told it is connected: it sees every event published
        # after that frame.
        subscription = self._source.subscribe()
        try:
            with frames:
                async with anyio.create_task_group() as group:

                    async def pump() -> None:
                        await self._pump(viewer, identity, subscription, frames, quiet)
                        # The source ran dry: the stream is over.
                        group.cancel_scope.cancel()

                    async def watch_close() -> None:
                        await self._closed.wait()
                        group.cancel_scope.cancel()

                    await frames.send(CONNECTED)
                    group.start_soon(pump)
                    group.start_soon(watch_close)
                    group.start_soon(self._heartbeat, frames, quiet)
                    if credential is not None:
                        group.start_soon(self._watch_credential, credential, group.cancel_scope)
        finally:
            release()
            close: Any = getattr(subscription, "aclose", None)
            if close is not None:
                with anyio.CancelScope(shield=True):
                    await close()

    @property
    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        async def events(request: Request) -> Response:
            identity = require_identity(request)
            credential = auth_context(request).credential
            viewer, release = self._admission(identity)
            # Bounded: a client that does not read holds at most _BUFFER frames here, then
            # the stream's subscription (which counts what it drops) fills.
            frames, written = anyio.create_memory_object_stream[bytes](_BUFFER)

            async def produce() -> None:
                await self._serve(viewer, identity, credential, frames, release)

            async def content() -> AsyncIterator[bytes]:
                # Every frame waiting is written at once: one write through the HTTP layers
                # and the socket for a burst of events, not one per event (#35).
                with written:
                    async for frame in written:
                        burst = [frame]
                        while True:
                            try:
                                burst.append(written.receive_nowait())
                            except (anyio.WouldBlock, anyio.EndOfStream):
                                break
                        yield frame if len(burst) == 1 else b"".join(burst)

            def finish() -> None:
                # Runs after every response, HEAD included (which never starts the producer
                # nor reads the content); each step does nothing the second time.
                frames.close()
                written.close()
                release()

            return EventSourceResponse(
                content(),
                headers=_HEADERS,
                ping=0,
                shutdown_grace_period=_EXIT_GRACE_S,
                data_sender_callable=produce,
                background=BackgroundTask(finish),
            )

        return events


def _viewer_key(identity: Identity) -> str:
    return identity.user_id or ""
