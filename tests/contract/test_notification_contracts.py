"""The notification store contract (issue #17) on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from clarion.adapters.memory import (
    InMemoryNotificationStore,
    InMemoryStore,
)
from clarion.adapters.sql import SqlNotificationStore
from clarion.adapters.system import UuidIds
from clarion.ports.notifications import NotificationStore
from clarion.ports.testing import ContractWorld, NotificationStoreContract
from tests.contract.test_memory_contracts import OneMemoryStore
from tests.integration.sql.support import (
    empty_database,
    sql_world,
)


class TestInMemoryNotificationStore(OneMemoryStore, NotificationStoreContract):
    @pytest.fixture(name="notifications")
    def fixture_notifications(
        self, store: InMemoryStore, world: ContractWorld
    ) -> NotificationStore:
        return InMemoryNotificationStore(store, world.clock, UuidIds())


class TestSqliteNotificationStore(NotificationStoreContract):
    @pytest.fixture(name="world")
    def fixture_world(self, sqlite_engine: Engine) -> ContractWorld:
        return sql_world(sqlite_engine)

    @pytest.fixture(name="notifications")
    def fixture_notifications(
        self, sqlite_engine: Engine, world: ContractWorld
    ) -> NotificationStore:
        return SqlNotificationStore(sqlite_engine, world.clock, UuidIds())


@pytest.mark.postgres
class TestPostgresNotificationStore(NotificationStoreContract):
    @pytest.fixture(name="world")
    def fixture_world(self, shared_postgres_engine: Engine) -> ContractWorld:
        empty_database(shared_postgres_engine)
        return sql_world(shared_postgres_engine)

    @pytest.fixture(name="notifications")
    def fixture_notifications(
        self, shared_postgres_engine: Engine, world: ContractWorld
    ) -> NotificationStore:
        return SqlNotificationStore(shared_postgres_engine, world.clock, UuidIds())
