"""Every shipped contract suite, run against the in-memory reference adapters."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clarion.adapters.memory import (
    InMemoryAnswerLinkStore,
    InMemoryAskRecords,
    InMemoryClaimRepository,
    InMemoryGroupDirectory,
    InMemoryHostRepository,
    InMemoryStandingApprovals,
    InMemoryStore,
    InMemoryTokenStore,
    InProcessLeases,
)
from clarion.adapters.system import UuidIds
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.domain.asks import retry_key
from clarion.ports import AnswerLinkStore, AskRecords, TaskAuthorizer
from clarion.ports.testing import (
    AnswerLinkStoreContract,
    ApprovalsContract,
    ApprovalWorld,
    AskRecordsContract,
    ClaimRepositoryContract,
    ContractWorld,
    HostRepositoryContract,
    ManualClock,
    Replica,
    TaskAuthorizerContract,
    TokenStoreContract,
)
from clarion.ports.testing.asks import ask_record


def memory_world(store: InMemoryStore | None = None) -> ContractWorld:
    store, clock, ids = store or InMemoryStore(), ManualClock(), UuidIds()
    leases = InProcessLeases()

    def replica() -> Replica:
        lease = leases.lease()
        claims = InMemoryClaimRepository(store, clock, ids, lease=lease)
        return Replica(claims=claims, end=lease.release)

    return ContractWorld(
        host=InMemoryHostRepository(store, clock, ids),
        claims=InMemoryClaimRepository(store, clock, ids),
        tokens=InMemoryTokenStore(store, clock, ids),
        clock=clock,
        storage_names=store.collection_names,
        replica=replica,
    )


class TestInMemoryClaimRepository(ClaimRepositoryContract):
    @pytest.fixture(name="world")
    def fixture_world(self) -> ContractWorld:
        return memory_world()


class TestInMemoryApprovals(ApprovalsContract):
    @pytest.fixture(name="approvals")
    def fixture_approvals(self) -> ApprovalWorld:
        store = InMemoryStore()
        world = memory_world(store)
        return ApprovalWorld(
            world=world,
            groups=InMemoryGroupDirectory(store, world.clock, UuidIds()),
            standing=InMemoryStandingApprovals(store),
        )


class TestInMemoryHostRepository(HostRepositoryContract):
    @pytest.fixture(name="world")
    def fixture_world(self) -> ContractWorld:
        return memory_world()


class TestInMemoryTokenStore(TokenStoreContract):
    @pytest.fixture(name="world")
    def fixture_world(self) -> ContractWorld:
        return memory_world()


class TestHostTaskAuthorizer(TaskAuthorizerContract):
    @pytest.fixture(name="world")
    def fixture_world(self) -> ContractWorld:
        return memory_world()

    @pytest.fixture(name="authorizer")
    def fixture_authorizer(self, world: ContractWorld) -> TaskAuthorizer:
        return HostTaskAuthorizer(world.host)


class TestInMemoryAnswerLinkStore(AnswerLinkStoreContract):
    @pytest.fixture(name="store")
    def fixture_store(self) -> AnswerLinkStore:
        return InMemoryAnswerLinkStore()


@pytest.mark.server
def test_importing_the_ports_and_memory_adapters_does_not_import_pytest() -> None:
    """The contract suites are a test tool; production imports must not pull pytest in."""
    probe = "import sys, clarion.ports, clarion.adapters.memory; sys.exit('pytest' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", probe], check=False)
    assert completed.returncode == 0


class OneMemoryStore:
    """For a contract whose store under test shares the world's memory: ``store`` is that
    one :class:`InMemoryStore` and ``world`` the :func:`memory_world` over it."""

    @pytest.fixture(name="store")
    def fixture_store(self) -> InMemoryStore:
        return InMemoryStore()

    @pytest.fixture(name="world")
    def fixture_world(self, store: InMemoryStore) -> ContractWorld:
        return memory_world(store)


class TestInMemoryAskRecords(OneMemoryStore, AskRecordsContract):
    @pytest.fixture(name="records")
    def fixture_records(self, store: InMemoryStore) -> AskRecords:
        return InMemoryAskRecords(store)


def test_ask_records_without_the_world_list_asks_still_waiting_too() -> None:
    """Beside a host's own claim repository the in-memory ask records cannot see the bundles:
    ``returned`` then lists every earlier ask (the superset the port allows), and the use case
    tells the settled ones by re-reading each."""
    world = memory_world()
    world.bundle_in_new_session("pending")
    records = InMemoryAskRecords()
    records.reserve(ask_record("mine", key=retry_key("", {"n": 1})))
    waiting = records.reserve(ask_record("w", key=retry_key("", {"n": 2}), pending_id="pending"))
    assert records.returned("mine", 10) == (waiting,)
