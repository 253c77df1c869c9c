"""Shared pieces of the LISTEN/NOTIFY adapter tests: one durable world (in-memory repositories
shared by every instance, as one database would be), instances with a controllable listener
reconnection, and a way to cut an instance's listener connection from the server side."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import anyio
import attrs
import psycopg
from psycopg import sql

from clarion.adapters.events import InProcessEventBus
from clarion.adapters.memory import (
    InMemoryClaimRepository,
    InMemoryStore,
)
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.postgres_notify import DEFAULT_CHANNEL, PostgresLiveDelivery, libpq_conninfo
from clarion.adapters.postgres_notify.link import backoff
from clarion.adapters.postgres_notify.protocol import Encoder, Message, Reassembler
from clarion.adapters.system import UuidIds
from clarion.domain.model import ANSWERED, REJECTED, Resolution
from clarion.domain.rows import Bundle
from clarion.ports.claims import ClaimRepository, ClaimResult
from clarion.ports.testing import ContractWorld, ManualClock, answers_for

M = TypeVar("M")


@attrs.define(eq=False)
class ReconnectGate:
    """A listener reconnection delay that holds the instance deaf until :attr:`opened`."""

    deaf: anyio.Event = attrs.field(factory=anyio.Event)
    opened: anyio.Event = attrs.field(factory=anyio.Event)
    attempts: int = 0

    async def __call__(self, attempt: int) -> None:
        self.attempts += 1
        self.deaf.set()
        await self.opened.wait()


@contextlib.asynccontextmanager
async def instance(
    database_url: str,
    world: ContractWorld,
    *,
    gate: ReconnectGate | None = None,
    claims: ClaimRepository | None = None,
    liveness_interval: float = 1.0,
    recheck_interval: float = 5.0,
) -> AsyncIterator[PostgresLiveDelivery]:
    """One process's live delivery over the shared ``world``."""
    live = PostgresLiveDelivery(
        database_url,
        claims=claims or world.claims,
        liveness_interval=liveness_interval,
        recheck_interval=recheck_interval,
        local_waiters=InMemoryWaiters(),
        local_events=InProcessEventBus(),
        reconnect_delay=backoff if gate is None else gate,
    )
    async with live:
        yield live


async def cut_listener(database_url: str, live: PostgresLiveDelivery) -> None:
    """Terminate the instance's listener connection on the server (a dropped connection)."""
    pid = live.listener_pid
    assert pid is not None
    async with await psycopg.AsyncConnection.connect(
        libpq_conninfo(database_url), autocommit=True
    ) as connection:
        cursor = await connection.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
        assert await cursor.fetchone() == (True,)


def claimed_resolution(result: ClaimResult, pending_id: str) -> Resolution:
    """The winner's resolution for a claim made with :func:`claim_answer`/``claim_reject``."""
    assert result.claimed
    assert result.responded_at is not None
    rejected = result.rows[0].status == REJECTED
    return Resolution(
        pending_id=pending_id,
        status=REJECTED if rejected else ANSWERED,
        answers=tuple(row.response for row in result.rows if row.response is not None),
        rejected=rejected,
        reject_reason="",
        responded_at=result.responded_at,
        claimed=True,
    )


def claim_answer(world: ContractWorld, pending_id: str) -> ClaimResult:
    return world.claims.complete_active_bundle(
        pending_id, ANSWERED, answers_for(world.bundle(pending_id))
    )


def claim_reject(world: ContractWorld, pending_id: str) -> ClaimResult:
    return world.claims.complete_active_bundle(pending_id, REJECTED, None)


@attrs.define(eq=False)
class FinalizeOnce:
    """The resolver's confirm: finalize the claimed rows, failing when that is refused."""

    world: ContractWorld
    result: ClaimResult
    status: str = ANSWERED
    calls: int = 0

    async def __call__(self) -> None:
        self.calls += 1
        pending_id = self.result.rows[0].pending_id
        rows = self.world.claims.finalize_delivery(pending_id, self.status, self.result.claimed_ids)
        if rows is None:
            raise RuntimeError("clarification delivery confirmation failed")


class FakePeer:
    """A process that listens like a replica (same channels, same ``application_name``
    scheme) but only says what the test tells it to."""

    def __init__(self, database_url: str, instance: str = "fake0peer") -> None:
        self._conninfo = libpq_conninfo(database_url)
        self.instance = instance
        self._encoder = Encoder(instance)
        self._reassembler = Reassembler()
        self._listener: psycopg.AsyncConnection[Any] | None = None
        self._sender: psycopg.AsyncConnection[Any] | None = None

    async def __aenter__(self) -> FakePeer:
        self._listener = await psycopg.AsyncConnection.connect(
            self._conninfo, autocommit=True, application_name=f"{DEFAULT_CHANNEL}:{self.instance}"
        )
        for name in (DEFAULT_CHANNEL, f"{DEFAULT_CHANNEL}.{self.instance}"):
            await self._listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(name)))
        self._sender = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.vanish()
        if self._sender is not None:
            await self._sender.close()

    async def vanish(self) -> None:
        """Stop listening without a goodbye (what a killed process looks like): the server
        ends the listening connection, and this returns once it is gone."""
        if self._listener is None:
            return
        pid = self._listener.info.backend_pid
        assert self._sender is not None
        await self._sender.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))
        await self._listener.close()
        self._listener = None

    async def receive(self, kind: type[M]) -> tuple[str, M]:
        """The next message of type ``kind`` (and its sender), skipping others."""
        assert self._listener is not None
        async for notify in self._listener.notifies():
            for envelope in self._reassembler.feed(notify.payload):
                if isinstance(envelope.message, kind):
                    return envelope.sender, envelope.message
        raise AssertionError("the listener stopped")

    async def send(self, message: Message, to: str | None = None) -> None:
        assert self._sender is not None
        channel = DEFAULT_CHANNEL if to is None else f"{DEFAULT_CHANNEL}.{to}"
        for payload in self._encoder.encode(message):
            await self._sender.execute("SELECT pg_notify(%s, %s)", (channel, payload))


class ReadSpy(InMemoryClaimRepository):
    """The in-memory claim repository over a shared store, noting each bundle read (they
    happen on worker threads, hence a thread event)."""

    def __init__(self, store: InMemoryStore) -> None:
        super().__init__(store, ManualClock(), UuidIds())
        self.bundle_read = threading.Event()

    def load_bundle(self, pending_id: str) -> Bundle | None:
        bundle = super().load_bundle(pending_id)
        self.bundle_read.set()
        return bundle
