"""Every shipped contract suite, run against the SQL adapters on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from sqlalchemy.engine import Engine

from clarion.adapters.sql import (
    SqlAnswerLinkStore,
    SqlAskRecords,
    SqlGroupDirectory,
    SqlStandingApprovals,
)
from clarion.adapters.system import UuidIds
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.ports import AnswerLinkStore, AskRecords, TaskAuthorizer
from clarion.ports.testing import (
    AnswerLinkStoreContract,
    ApprovalsContract,
    ApprovalWorld,
    AskRecordsContract,
    ClaimRepositoryContract,
    ContractWorld,
    HostRepositoryContract,
    TaskAuthorizerContract,
    TokenStoreContract,
)
from tests.integration.sql.support import (
    sql_world,
)


class TestSqliteClaimRepository(ClaimRepositoryContract):
    @pytest.fixture(name="world")
    def fixture_world(self, sqlite_engine: Engine) -> ContractWorld:
        return sql_world(sqlite_engine)


def sql_approvals(engine: Engine) -> ApprovalWorld:
    world = sql_world(engine)
    return ApprovalWorld(
        world=world,
        groups=SqlGroupDirectory(engine, world.clock, UuidIds()),
        standing=SqlStandingApprovals(engine),
    )


class TestSqliteApprovals(ApprovalsContract):
    @pytest.fixture(name="approvals")
    def fixture_approvals(self, sqlite_engine: Engine) -> ApprovalWorld:
        return sql_approvals(sqlite_engine)


@pytest.mark.postgres
class TestPostgresApprovals(ApprovalsContract):
    @pytest.fixture(name="approvals")
    def fixture_approvals(self, postgres_engine: Engine) -> ApprovalWorld:
        return sql_approvals(postgres_engine)


class TestSqliteHostRepository(HostRepositoryContract):
    @pytest.fixture(name="world")
    def fixture_world(self, sqlite_engine: Engine) -> ContractWorld:
        return sql_world(sqlite_engine)


class TestSqliteTokenStore(TokenStoreContract):
    @pytest.fixture(name="world")
    def fixture_world(self, sqlite_engine: Engine) -> ContractWorld:
        return sql_world(sqlite_engine)


class TestSqliteHostTaskAuthorizer(TaskAuthorizerContract):
    @pytest.fixture(name="world")
    def fixture_world(self, sqlite_engine: Engine) -> ContractWorld:
        return sql_world(sqlite_engine)

    @pytest.fixture(name="authorizer")
    def fixture_authorizer(self, world: ContractWorld) -> TaskAuthorizer:
        return HostTaskAuthorizer(world.host)


@pytest.mark.postgres
class TestPostgresClaimRepository(ClaimRepositoryContract):
    @pytest.fixture(name="world")
    def fixture_world(self, postgres_engine: Engine) -> Iterator[ContractWorld]:
        with ExitStack() as cleanup:  # the replicas' leases
            yield sql_world(postgres_engine, cleanup=cleanup)


@pytest.mark.postgres
class TestPostgresHostRepository(HostRepositoryContract):
    @pytest.fixture(name="world")
    def fixture_world(self, postgres_engine: Engine) -> ContractWorld:
        return sql_world(postgres_engine)


@pytest.mark.postgres
class TestPostgresTokenStore(TokenStoreContract):
    @pytest.fixture(name="world")
    def fixture_world(self, postgres_engine: Engine) -> ContractWorld:
        return sql_world(postgres_engine)


@pytest.mark.postgres
class TestPostgresHostTaskAuthorizer(TaskAuthorizerContract):
    @pytest.fixture(name="world")
    def fixture_world(self, postgres_engine: Engine) -> ContractWorld:
        return sql_world(postgres_engine)

    @pytest.fixture(name="authorizer")
    def fixture_authorizer(self, world: ContractWorld) -> TaskAuthorizer:
        return HostTaskAuthorizer(world.host)


class TestSqliteAnswerLinkStore(AnswerLinkStoreContract):
    @pytest.fixture(name="store")
    def fixture_store(self, sqlite_engine: Engine) -> AnswerLinkStore:
        return SqlAnswerLinkStore(sqlite_engine)


@pytest.mark.postgres
class TestPostgresAnswerLinkStore(AnswerLinkStoreContract):
    @pytest.fixture(name="store")
    def fixture_store(self, postgres_engine: Engine) -> AnswerLinkStore:
        return SqlAnswerLinkStore(postgres_engine)


class TestSqliteAskRecords(AskRecordsContract):
    @pytest.fixture(name="world")
    def fixture_world(self, sqlite_engine: Engine) -> ContractWorld:
        return sql_world(sqlite_engine)

    @pytest.fixture(name="records")
    def fixture_records(self, sqlite_engine: Engine) -> AskRecords:
        return SqlAskRecords(sqlite_engine)


@pytest.mark.postgres
class TestPostgresAskRecords(AskRecordsContract):
    @pytest.fixture(name="world")
    def fixture_world(self, postgres_engine: Engine) -> ContractWorld:
        return sql_world(postgres_engine)

    @pytest.fixture(name="records")
    def fixture_records(self, postgres_engine: Engine) -> AskRecords:
        return SqlAskRecords(postgres_engine)
