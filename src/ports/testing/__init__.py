"""Contract suites for Clarion's ports, shipped so every implementation runs the same tests.

Written once against the port API (in the manner of fsspec's abstract tests and SQLAlchemy's
dialect suite) and run by the in-memory adapters, the SQL adapters on SQLite and PostgreSQL, and
any host that brings its own repository. This module is a test tool: it imports pytest, and
nothing in ``clarion.ports`` imports it.

Usage — subclass each suite in your own test module and provide a fresh world per test::

    import pytest
    from clarion.ports.testing import (
        ClaimRepositoryContract, ContractWorld, HostRepositoryContract, ManualClock,
        TaskAuthorizerContract, TokenStoreContract,
    )

    def make_world() -> ContractWorld:
        clock = ManualClock()
        store = MyStore(clock=clock)                    # one store shared by all ports
        return ContractWorld(
            host=MyHostRepository(store), claims=MyClaimRepository(store),
            tokens=MyTokenStore(store), clock=clock,
            storage_names=store.table_names,            # for the P1 structural check
        )

    class TestMyClaims(ClaimRepositoryContract):
        @pytest.fixture(name="world")
        def fixture_world(self) -> ContractWorld:
            return make_world()

    class TestMyAuthorizer(TaskAuthorizerContract):
        @pytest.fixture(name="world")
        def fixture_world(self) -> ContractWorld:
            return make_world()

        @pytest.fixture(name="authorizer")
        def fixture_authorizer(self, world: ContractWorld) -> TaskAuthorizer:
            return HostTaskAuthorizer(world.host)

``HostRepositoryContract`` and ``TokenStoreContract`` are subclassed the same way;
``AnswerLinkStoreContract`` needs a ``store`` fixture (a fresh answer-link store) instead, and
``AskRecordsContract`` a ``records`` fixture (a fresh store of agent asks) besides the
``world`` whose bundles it sees, and
``AuditChainContract`` an ``audit`` fixture (the audit chain's reader on the world's store).
``WaitersContract`` (async, anyio) needs a ``waiters`` fixture instead of a world, and an
implementation spanning processes also overrides ``responder`` (see its module). The world's
implementations must read ``world.clock`` (a :class:`ManualClock`) for every timestamp they
write. The fixture may be a generator (to dispose of an engine or drop a database afterwards).
Suites seed data only through the ports (:class:`ContractWorld` helpers, including
``raw_row`` for legacy and malformed clarification rows), so no suite knows how you store it.
"""

from clarion.ports.testing.answer_links import AnswerLinkStoreContract
from clarion.ports.testing.approvals import ApprovalsContract, ApprovalWorld
from clarion.ports.testing.asks import AskRecordsContract
from clarion.ports.testing.audit import AuditChainContract
from clarion.ports.testing.authorizer import TaskAuthorizerContract
from clarion.ports.testing.claims import ClaimRepositoryContract, ClaimTransitionsContract
from clarion.ports.testing.host import HostRepositoryContract
from clarion.ports.testing.lifecycle import ClaimLifecycleContract
from clarion.ports.testing.listing import ListActiveBundlesContract
from clarion.ports.testing.notifications import NotificationStoreContract
from clarion.ports.testing.tokens import TokenStoreContract
from clarion.ports.testing.waiters import WaitersContract
from clarion.ports.testing.world import (
    ContractWorld,
    ManualClock,
    Replica,
    answers_for,
    claim,
    row_metadata,
    sample_question,
    sample_questions,
    statuses,
)

__all__ = [
    "AnswerLinkStoreContract",
    "ApprovalWorld",
    "ApprovalsContract",
    "AskRecordsContract",
    "AuditChainContract",
    "ClaimLifecycleContract",
    "ClaimRepositoryContract",
    "ClaimTransitionsContract",
    "ContractWorld",
    "HostRepositoryContract",
    "ListActiveBundlesContract",
    "ManualClock",
    "NotificationStoreContract",
    "Replica",
    "TaskAuthorizerContract",
    "TokenStoreContract",
    "WaitersContract",
    "answers_for",
    "claim",
    "row_metadata",
    "sample_question",
    "sample_questions",
    "statuses",
]
