"""Two psycopg 3 connections to the shared PostgreSQL database: one that ``LISTEN``s, one that
sends ``NOTIFY``s and asks who else is listening.

- The listener subscribes to the broadcast channel and to this instance's own channel, and
  hands every decoded message to ``on_message`` in the order PostgreSQL committed them. When
  the connection drops it reconnects (``reconnect_delay`` between attempts) and then calls
  ``on_connected``, so the owner can make up for what it may have missed meanwhile.
- The sender batches queued messages into one statement (one transaction, one round trip).
- A process is a *member* while its listener connection is alive: the listener's
  ``application_name`` is ``<channel>:<instance>``, and :meth:`NotifyLink.members` reads
  ``pg_stat_activity``. A process killed with ``kill -9`` leaves at once (its socket closes);
  TCP keepalives on the listener make the server drop a vanished host's connection too.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import attrs
import psycopg
import structlog
from anyio.abc import TaskGroup
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from clarion.adapters.keepalives import KEEPALIVES, SERVER_KEEPALIVES
from clarion.adapters.postgres_notify.protocol import Encoder, Envelope, Message, Reassembler

log = structlog.get_logger(__name__)

BATCH: Final = 200


class LinkUnavailable(Exception):
    """The database could not be reached to send a message or read the members."""


async def backoff(attempt: int) -> None:
    """The default pause before reconnection attempt ``attempt`` (1, 2, ...): 0.1 s doubling
    to at most 5 s."""
    await anyio.sleep(min(5.0, 0.1 * 2 ** min(attempt - 1, 6)))


@attrs.define(eq=False)
class _Outgoing:
    channel: str
    payloads: list[str]
    done: anyio.Event | None = None
    error: BaseException | None = None


class NotifyLink:
    """The connections of one instance: :meth:`start` them inside a task group, cancel that
    task group, then :meth:`close` them."""

    def __init__(
        self,
        conninfo: str,
        *,
        channel: str,
        instance: str,
        on_message: Callable[[Envelope], None],
        on_connected: Callable[[bool], None],
        reconnect_delay: Callable[[int], Awaitable[None]] = backoff,
    ) -> None:
        self._conninfo = conninfo
        self.channel = channel
        self.instance = instance
        self.application_name = f"{channel}:{instance}"
        self._on_message = on_message
        self._on_connected = on_connected
        self._reconnect_delay = reconnect_delay
        self._encoder = Encoder(instance)
        self._reassembler = Reassembler()
        self._send_queue, self._receive_queue = anyio.create_memory_object_stream[_Outgoing](
            math.inf
        )
        self._sender: psycopg.AsyncConnection[Any] | None = None
        self._listener: psycopg.AsyncConnection[Any] | None = None
        self._sender_lock = anyio.Lock()
        self.running = False
        self.listening = False
        self.listener_pid: int | None = None

    def direct_channel(self, instance: str) -> str:
        return f"{self.channel}.{instance}"

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, tasks: TaskGroup) -> None:
        """Connect both connections and start listening.

        Raises:
            psycopg.OperationalError: the database cannot be reached (the process should not
                start without it).
        """
        self._sender = await self._connect(f"{self.channel}-send:{self.instance}")
        listener = await self._connect_listener()
        self.running = True
        tasks.start_soon(self._send_loop)
        tasks.start_soon(self._listen_loop, listener)
        self._on_connected(False)

    async def close(self) -> None:
        """Close both connections; call it after the task group running the loops ended."""
        self.running = False
        self.listening = False
        self._send_queue.close()
        self._receive_queue.close()
        for connection in (self._listener, self._sender):
            if connection is not None:
                with anyio.CancelScope(shield=True):
                    await connection.close()

    async def _connect(self, application_name: str) -> psycopg.AsyncConnection[Any]:
        options = conninfo_to_dict(self._conninfo).get("options")
        conninfo = make_conninfo(
            self._conninfo,
            **KEEPALIVES,
            options=" ".join(str(part) for part in (options, SERVER_KEEPALIVES) if part),
            application_name=application_name,
        )
        return await psycopg.AsyncConnection.connect(conninfo, autocommit=True)

    async def _connect_listener(self) -> psycopg.AsyncConnection[Any]:
        connection = await self._connect(self.application_name)
        try:
            for name in (self.channel, self.direct_channel(self.instance)):
                await connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(name)))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await connection.close()
            raise
        self._listener = connection
        self.listener_pid = connection.info.backend_pid
        self._reassembler.reset()
        self.listening = True
        return connection

    # -- receiving -------------------------------------------------------------------------

    async def _listen_loop(self, connection: psycopg.AsyncConnection[Any] | None) -> None:
        attempt = 0
        while self.running:
            try:
                if connection is None:
                    attempt += 1
                    await self._reconnect_delay(attempt)
                    connection = await self._connect_listener()
                    attempt = 0
                    log.info("live.listener_reconnected", instance=self.instance)
                    self._on_connected(True)
                async for notify in connection.notifies():
                    self._receive(notify.payload)
            except (psycopg.OperationalError, OSError):
                self.listening = False
                if self.running:
                    log.warning("live.listener_lost", instance=self.instance, attempt=attempt)
                if connection is not None:
                    with anyio.CancelScope(shield=True):
                        await connection.close()
                connection = None

    def _receive(self, payload: str) -> None:
        try:
            envelopes = list(self._reassembler.feed(payload))
        except (ValueError, KeyError, TypeError):
            log.warning("live.bad_notification", instance=self.instance)
            return
        for envelope in envelopes:
            self._on_message(envelope)

    # -- sending ---------------------------------------------------------------------------

    def post(self, message: Message, to: str | None = None) -> None:
        """Queue ``message`` for the broadcast channel (or instance ``to``); never blocks.
        Dropped when the link is not running — also when it stops between that check and the
        queue (a reply posted from the listen loop while the link closes)."""
        if self.running:
            try:
                self._enqueue(message, to, None)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                log.debug("live.post_dropped_closing", channel=to or self.channel)

    async def send(self, message: Message, to: str | None = None) -> None:
        """Send ``message`` and return once its transaction committed.

        Raises:
            LinkUnavailable: the link is not running or the database could not be reached.
        """
        if not self.running:
            raise LinkUnavailable("live delivery is not running")
        outgoing = self._enqueue(message, to, anyio.Event())
        assert outgoing.done is not None
        await outgoing.done.wait()
        if outgoing.error is not None:
            raise LinkUnavailable(str(outgoing.error)) from outgoing.error

    def _enqueue(self, message: Message, to: str | None, done: anyio.Event | None) -> _Outgoing:
        channel = self.channel if to is None else self.direct_channel(to)
        outgoing = _Outgoing(channel, self._encoder.encode(message), done)
        self._send_queue.send_nowait(outgoing)
        return outgoing

    async def _send_loop(self) -> None:
        async with self._receive_queue:
            async for first in self._receive_queue:
                batch = [first]
                while len(batch) < BATCH:
                    try:
                        batch.append(self._receive_queue.receive_nowait())
                    except anyio.WouldBlock:
                        break
                error: BaseException | None = None
                try:
                    await self._notify(batch)
                except LinkUnavailable as exc:
                    log.warning("live.send_failed", instance=self.instance, messages=len(batch))
                    error = exc
                for outgoing in batch:
                    outgoing.error = error
                    if outgoing.done is not None:
                        outgoing.done.set()

    async def _notify(self, batch: list[_Outgoing]) -> None:
        channels = [item.channel for item in batch for _ in item.payloads]
        payloads = [payload for item in batch for payload in item.payloads]
        await self._on_sender(
            "SELECT pg_notify(c, p) FROM unnest(%s::text[], %s::text[]) AS t(c, p)",
            (channels, payloads),
        )

    async def members(self) -> dict[str, int]:
        """Instances listening right now (this one included), each with its listener's
        backend pid.

        Raises:
            LinkUnavailable: the database could not be reached.
        """
        rows = await self._on_sender(
            "SELECT application_name, pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND starts_with(application_name, %s)",
            (f"{self.channel}:",),
        )
        prefix = len(self.channel) + 1
        return {str(name)[prefix:]: int(pid) for name, pid in rows}

    async def _on_sender(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Run ``query`` on the sender connection, reconnecting once if it was lost (every
        message is idempotent, so a repeat after an unknown outcome is harmless)."""
        async with self._sender_lock:
            for attempt in (1, 2):
                try:
                    if self._sender is None or self._sender.closed:
                        self._sender = await self._connect(f"{self.channel}-send:{self.instance}")
                    cursor = await self._sender.execute(query, params)
                    return await cursor.fetchall()
                except (psycopg.OperationalError, OSError) as exc:
                    if self._sender is not None:
                        with anyio.CancelScope(shield=True):
                            await self._sender.close()
                    self._sender = None
                    if attempt == 2:
                        raise LinkUnavailable(str(exc)) from exc
        raise AssertionError("unreachable")
