"""The Waiters contract suite, run against the in-process adapter and against the PostgreSQL
``LISTEN/NOTIFY`` adapter — in one process, and with the waiter and the answer in two
instances (two processes' worth of connections) on one database."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from clarion.adapters.events import InProcessEventBus
from clarion.adapters.memory import InMemoryClaimRepository, InMemoryStore
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.postgres_notify import PostgresLiveDelivery
from clarion.adapters.system import SystemClock, UuidIds
from clarion.ports.testing import WaitersContract
from clarion.ports.waiters import Waiters


def live_delivery(database_url: str) -> PostgresLiveDelivery:
    """One process's live delivery (its durable re-checks read an empty in-memory store)."""
    return PostgresLiveDelivery(
        database_url,
        claims=InMemoryClaimRepository(InMemoryStore(), SystemClock(), UuidIds()),
        local_waiters=InMemoryWaiters(),
        local_events=InProcessEventBus(),
    )


class TestInMemoryWaiters(WaitersContract):
    @pytest.fixture(name="waiters")
    def fixture_waiters(self) -> Waiters:
        return InMemoryWaiters()


class TestPostgresWaitersInOneProcess(WaitersContract):
    @pytest.fixture(name="waiters")
    async def fixture_waiters(self, postgres_database_url: str) -> AsyncIterator[Waiters]:
        async with live_delivery(postgres_database_url) as live:
            yield live.waiters


class TestPostgresWaitersAcrossProcesses(WaitersContract):
    """Agents wait on one instance; every answer is delivered through the other."""

    @pytest.fixture(name="instances")
    async def fixture_instances(
        self, postgres_database_url: str
    ) -> AsyncIterator[tuple[PostgresLiveDelivery, PostgresLiveDelivery]]:
        async with (
            live_delivery(postgres_database_url) as holder,
            live_delivery(postgres_database_url) as responder,
        ):
            yield holder, responder

    @pytest.fixture(name="waiters")
    def fixture_waiters(
        self, instances: tuple[PostgresLiveDelivery, PostgresLiveDelivery]
    ) -> Waiters:
        return instances[0].waiters

    @pytest.fixture(name="responder")
    def fixture_responder(
        self, instances: tuple[PostgresLiveDelivery, PostgresLiveDelivery]
    ) -> Waiters:
        return instances[1].waiters
