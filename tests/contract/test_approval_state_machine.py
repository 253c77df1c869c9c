"""Issue #33: votes from several voters against an in-memory REFERENCE of quorum and veto, as
a Hypothesis state machine, on the memory store, SQLite and (with CLARION_TEST_POSTGRES_URL)
PostgreSQL.

Each run asks approval requests with random quorums, casts votes (approve or deny, repeats
included) and sometimes expires a request; after every step each request is in exactly one
state — pending, decided (one claim, the reference's decision) or closed — its recorded votes
are the reference's, and every repeat and every late voter is told the decision."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import attrs
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy.engine import Engine

from clarion.adapters.memory import InMemoryStore
from clarion.domain.approvals import Decision, Vote
from clarion.domain.model import ANSWERED, EXPIRED
from clarion.domain.resolved_by import Surface
from clarion.ports.testing import ContractWorld
from clarion.ports.testing.approvals import ask_approval, resolver
from tests.contract.test_memory_contracts import memory_world
from tests.integration.sql.support import sql_world

VOTERS = ("ann", "bob", "cid", "dee", "eve")


@attrs.define
class Reference:
    """One request as the reference model sees it."""

    required: int
    session_id: str
    votes: list[Vote] = attrs.field(factory=list)
    decision: Decision | None = None
    closed: bool = False

    def first_vote(self, voter_id: str) -> Vote | None:
        return next((v for v in self.votes if v.voter_id == voter_id), None)

    def approvals(self) -> int:
        return len({v.voter_id for v in self.votes if v.decision is Decision.APPROVE})

    def apply(self, ballot: Vote) -> bool:
        """Record ``ballot`` when it counts; True when it decided the request."""
        self.votes.append(ballot)
        if ballot.decision is Decision.DENY:
            self.decision = Decision.DENY
        elif self.approvals() >= self.required:
            self.decision = Decision.APPROVE
        return self.decision is not None


def _key(vote: Vote | None) -> tuple[str, Decision, str] | None:
    return None if vote is None else (vote.voter_id, vote.decision, vote.comment)


class ApprovalMachine(RuleBasedStateMachine):
    """Drive one store; compare every answer with :class:`Reference`."""

    world_factory: Callable[[], ContractWorld]
    requests = Bundle("requests")

    def __init__(self) -> None:
        super().__init__()
        self.world = type(self).world_factory()
        self.model: dict[str, Reference] = {}
        self.prefix = uuid.uuid4().hex[:8]

    @initialize(target=requests, required=st.integers(1, 4))
    def first_request(self, required: int) -> str:
        return self._ask(required)

    @rule(target=requests, required=st.integers(1, 4))
    def ask(self, required: int) -> str:
        return self._ask(required)

    def _ask(self, required: int) -> str:
        pending_id = f"{self.prefix}-{len(self.model)}"
        bundle = ask_approval(self.world, pending_id, required=required)
        self.model[pending_id] = Reference(required=required, session_id=bundle.session_id)
        return pending_id

    @rule(
        pending_id=requests,
        voter_id=st.sampled_from(VOTERS),
        deny=st.sampled_from((False, False, False, True)),  # approvals reach quorums too
        comment=st.sampled_from(("", "ok", "no way")),
    )
    def vote(self, pending_id: str, voter_id: str, deny: bool, comment: str) -> None:
        ref = self.model[pending_id]
        decision = Decision.DENY if deny else Decision.APPROVE
        ballot = Vote(voter_id, voter_id.title(), decision, comment, Surface.INBOX)
        result = self.world.claims.cast_vote(pending_id, ballot, resolved_by=resolver(voter_id))
        earlier = ref.first_vote(voter_id)
        if earlier is not None:  # idempotent: the first vote, nothing written
            assert result.repeated
            assert _key(result.vote) == _key(earlier)
            assert result.claim is None
            assert result.decision is ref.decision
        elif ref.decision is not None or ref.closed:  # never recorded after the end
            assert (result.vote, result.repeated, result.claim) == (None, False, None)
            assert result.decision is ref.decision
        else:
            decided = ref.apply(ballot)
            assert _key(result.vote) == _key(ballot)
            assert not result.repeated
            assert result.decision is ref.decision
            assert (result.claim is not None) == decided
            assert result.claim is None or result.claim.claimed
        assert (result.approvals, result.required) == (ref.approvals(), ref.required)

    @rule(pending_id=requests)
    def expire(self, pending_id: str) -> None:
        ref = self.model[pending_id]
        ended = self.world.claims.expire_active_bundle(ref.session_id, pending_id)
        assert bool(ended) == (ref.decision is None and not ref.closed)
        if ended:
            ref.closed = True

    @invariant()
    def stores_agree_with_the_reference(self) -> None:
        for pending_id, ref in self.model.items():
            bundle = self.world.bundle(pending_id)
            statuses = [row.status for row in bundle.rows]
            if ref.decision is not None:
                assert statuses == [ANSWERED]
            elif ref.closed:
                assert statuses == [EXPIRED]
            else:
                assert statuses == ["pending"]
            assert bundle.decision is ref.decision
            stored = self.world.claims.approval_votes(pending_id)
            assert [_key(v) for v in stored] == [_key(v) for v in ref.votes]


def _run(factory: Callable[[], ContractWorld], examples: int) -> None:
    machine = type("Machine", (ApprovalMachine,), {"world_factory": staticmethod(factory)})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_votes_match_the_reference_in_memory() -> None:
    """#33 on the reference adapter (a fresh store per example)."""
    _run(lambda: memory_world(InMemoryStore()), 60)


def test_votes_match_the_reference_on_sqlite(sqlite_engine: Engine) -> None:
    """#33 on SQLite (one database; each example's requests have their own ids)."""
    _run(lambda: sql_world(sqlite_engine), 15)


@pytest.mark.postgres
def test_votes_match_the_reference_on_postgres(postgres_engine: Engine) -> None:
    """#33 on PostgreSQL."""
    _run(lambda: sql_world(postgres_engine), 10)
