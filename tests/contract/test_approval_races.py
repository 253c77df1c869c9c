"""Issue #33: concurrent votes at the store, on SQLite and PostgreSQL (and memory).

Each trial asks an M-of-N approval and lets N voters (most approving, some denying) vote at
the same instant from N threads. Whatever the interleaving, the request must be claimed
exactly once; the votes recorded must be exactly a prefix that the reference tally decides
at its last vote and not before; the stored decision must be that reference decision; every
voter not recorded must be told it. Prints ``trials=… anomalies=…`` (anomalies must be 0).
"""

from __future__ import annotations

import random

import pytest
from sqlalchemy.engine import Engine

from clarion.adapters.memory import InMemoryStore
from clarion.domain.approvals import Decision, Vote, tally
from clarion.domain.resolved_by import Surface
from clarion.ports.claims import VoteResult
from clarion.ports.testing import ContractWorld
from clarion.ports.testing.approvals import ask_approval, race_votes
from tests.contract.test_memory_contracts import memory_world
from tests.integration.sql.support import sql_world

VOTERS = 6


def _anomalies(world: ContractWorld, pending_id: str, results: list[VoteResult]) -> list[str]:
    """What went wrong in one trial (empty when nothing did)."""
    bundle = world.bundle(pending_id)
    assert bundle.approval is not None
    required = bundle.approval.terms.required_approvals
    recorded = list(world.claims.approval_votes(pending_id))
    found: list[str] = []
    claims = [r for r in results if r.claim is not None and r.claim.claimed]
    if len(claims) != 1:
        found.append(f"{len(claims)} claims")
    prefixes = [tally(required, recorded[:n]) for n in range(1, len(recorded) + 1)]
    reference = prefixes[-1] if prefixes else None
    if reference is None or any(p is not None for p in prefixes[:-1]):
        found.append(f"recorded votes {[(v.voter_id, v.decision) for v in recorded]} decide late")
    if bundle.decision is not reference:
        found.append(f"stored decision {bundle.decision} != reference {reference}")
    counted = {r.vote.voter_id for r in results if r.counted and r.vote is not None}
    if counted != {v.voter_id for v in recorded}:
        found.append("the voters told 'counted' are not the recorded ones")
    if any(r.decision is not reference for r in results if not r.counted):
        found.append("a late voter was not told the decision")
    return found


def _race(world: ContractWorld, trials: int, seed: int) -> None:
    rng = random.Random(seed)
    anomalies: list[str] = []
    for trial in range(trials):
        pending_id = f"race-{seed}-{trial}"
        ask_approval(world, pending_id, required=rng.randint(1, VOTERS))
        ballots = [
            Vote(
                f"v{n}",
                f"Voter {n}",
                Decision.DENY if rng.random() < 0.1 else Decision.APPROVE,
                f"from {n}",
                Surface.REST,
            )
            for n in range(VOTERS)
        ]
        results = race_votes(world, pending_id, ballots)
        anomalies += [f"{pending_id}: {a}" for a in _anomalies(world, pending_id, results)]
    print(f"trials={trials} anomalies={len(anomalies)}")
    assert anomalies == []


def test_concurrent_votes_in_memory() -> None:
    _race(memory_world(InMemoryStore()), 40, seed=1)


def test_concurrent_votes_on_sqlite(sqlite_engine: Engine) -> None:
    _race(sql_world(sqlite_engine), 25, seed=2)


@pytest.mark.postgres
def test_concurrent_votes_on_postgres(postgres_engine: Engine) -> None:
    _race(sql_world(postgres_engine), 40, seed=3)
