"""The audit chain's contract (issue #34) on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from clarion.adapters.memory import (
    InMemoryStore,
)
from clarion.adapters.memory.audit import InMemoryAuditChain
from clarion.adapters.sql.audit import SqlAuditChain
from clarion.ports.audit import AuditChain
from clarion.ports.testing import AuditChainContract, ContractWorld
from tests.contract.test_memory_contracts import OneMemoryStore
from tests.integration.sql.support import sql_world


class TestInMemoryAuditChain(OneMemoryStore, AuditChainContract):
    @pytest.fixture(name="audit")
    def fixture_audit(self, store: InMemoryStore) -> AuditChain:
        return InMemoryAuditChain(store)


class TestSqliteAuditChain(AuditChainContract):
    @pytest.fixture(name="world")
    def fixture_world(self, sqlite_engine: Engine) -> ContractWorld:
        return sql_world(sqlite_engine)

    @pytest.fixture(name="audit")
    def fixture_audit(self, sqlite_engine: Engine) -> AuditChain:
        return SqlAuditChain(sqlite_engine)


@pytest.mark.postgres
class TestPostgresAuditChain(AuditChainContract):
    @pytest.fixture(name="world")
    def fixture_world(self, postgres_engine: Engine) -> ContractWorld:
        return sql_world(postgres_engine)

    @pytest.fixture(name="audit")
    def fixture_audit(self, postgres_engine: Engine) -> AuditChain:
        return SqlAuditChain(postgres_engine)
