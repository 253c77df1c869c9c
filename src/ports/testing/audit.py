"""Contract suite for the audit chain (issue #34): :class:`clarion.ports.audit.AuditChain` read
beside the claim repository that writes it.

Subclass with two fixtures: ``world`` (a :class:`ContractWorld`) and ``audit`` (the chain
reader over the same store).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from clarion.domain.audit_chain import (
    GENESIS_HASH,
    RESOLVED_EVENT,
    RESTORED_EVENT,
    ChainRecord,
    link_hash,
    rows_disagree,
    verify_chain,
)
from clarion.domain.errors import ClaimError
from clarion.domain.model import ANSWERED, REJECTED, Answer, Identity
from clarion.domain.resolved_by import ResolvedBy, Surface
from clarion.ports.audit import AuditChain
from clarion.ports.testing.racing import race
from clarion.ports.testing.world import ContractWorld, answers_for, claim

RACERS = 6
BUNDLES_PER_RACER = 3


def _records(audit: AuditChain, scope: str) -> list[ChainRecord]:
    return list(audit.records(scope))


def _body(record: ChainRecord) -> dict[str, Any]:
    value = json.loads(record.body)
    assert isinstance(value, dict)
    return value


def _assert_intact(audit: AuditChain) -> None:
    """Every chain verifies, and every bundle's rows still show its newest record."""
    for head in audit.heads():
        records = list(audit.records(head.scope))
        report = verify_chain(head.scope, records, head)
        assert report.intact, report
        latest = {record.pending_id: record for record in records}
        rows = audit.bundle_rows(latest)
        for pending_id, record in latest.items():
            assert rows_disagree(record, rows.get(pending_id, [])) is None, record


class AuditChainContract:
    """Every resolution and restore appends one linked record, in its bundle's workspace."""

    def test_a_winning_claim_appends_one_record_with_its_outcome(
        self, world: ContractWorld, audit: AuditChain
    ) -> None:
        """Issue #34: status, normalized responses, who resolved (identity, kind, name,
        surface) and the claim's timestamp, linked to the genesis hash."""
        workspace = world.workspace()
        bundle = world.bundle_in_new_session("p1", workspace_id=workspace.id, questions=2)
        # Non-ASCII text: every store hashes the same UTF-8 bytes.
        who = ResolvedBy.of(
            Identity(user_id="u1", display_name="Zoë 東", kind="user"), Surface.REST
        )
        result = world.claims.complete_active_bundle(
            "p1", ANSWERED, answers_for(bundle, 2, "because"), resolved_by=who
        )
        assert result.claimed
        assert result.responded_at is not None
        (record,) = _records(audit, workspace.id)
        assert (record.scope, record.seq, record.pending_id) == (workspace.id, 1, "p1")
        assert record.prev_hash == GENESIS_HASH
        assert record.hash == link_hash(GENESIS_HASH, record.body)
        body = _body(record)
        assert body["event"] == RESOLVED_EVENT
        assert body["status"] == ANSWERED
        assert sorted(body["responses"]) == ["q1", "q2"]
        assert body["responses"]["q1"]["custom_text"] == "because"
        assert body["resolved_by"] == {
            "identity_id": "u1",
            "kind": "user",
            "display_name": "Zoë 東",
            "surface": "rest",
        }
        stamp = result.responded_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert body["at"] == stamp
        _assert_intact(audit)
        head = audit.head(workspace.id)
        assert head is not None
        assert (head.seq, head.hash) == (1, record.hash)

    def test_a_rejection_and_a_lost_claim(self, world: ContractWorld, audit: AuditChain) -> None:
        """A rejection records no responses; the loser of a claim appends nothing (R2)."""
        world.bundle_in_new_session("p1")
        assert world.claims.complete_active_bundle("p1", REJECTED, None).claimed
        assert not claim(world, "p1").claimed
        (record,) = _records(audit, "")
        body = _body(record)
        assert (body["status"], body["responses"]) == (REJECTED, {})
        assert body["resolved_by"]["kind"] == "unknown"

    def test_a_rolled_back_claim_appends_nothing(
        self, world: ContractWorld, audit: AuditChain
    ) -> None:
        """R4a: a claim missing a response rolls back whole, its record with it."""
        bundle = world.bundle_in_new_session("p1", questions=2)
        partial = dict(list(answers_for(bundle).items())[:1])
        with pytest.raises(ClaimError):
            world.claims.complete_active_bundle("p1", ANSWERED, partial)
        assert _records(audit, "") == []
        assert audit.head("") is None

    def test_each_workspace_has_its_own_chain(
        self, world: ContractWorld, audit: AuditChain
    ) -> None:
        first, second = world.workspace("a"), world.workspace("b")
        for n, workspace in enumerate([first, second, first]):
            world.bundle_in_new_session(f"p{n}", workspace_id=workspace.id)
            assert claim(world, f"p{n}").claimed
        assert [r.pending_id for r in _records(audit, first.id)] == ["p0", "p2"]
        assert [r.seq for r in _records(audit, second.id)] == [1]
        chained = _records(audit, first.id)
        assert chained[1].prev_hash == chained[0].hash
        assert sorted(head.scope for head in audit.heads()) == sorted([first.id, second.id])
        _assert_intact(audit)

    def test_a_restore_appends_a_restored_record(
        self, world: ContractWorld, audit: AuditChain
    ) -> None:
        """R7: a rolled-back delivery is recorded, never erased; the second claim follows."""
        world.bundle_in_new_session("p1")
        won = claim(world, "p1")
        assert world.claims.restore_active_bundle("p1", ANSWERED, won.claimed_ids) is not None
        assert claim(world, "p1", option=2).claimed
        records = _records(audit, "")
        events = [_body(r)["event"] for r in records]
        assert events == [RESOLVED_EVENT, RESTORED_EVENT, RESOLVED_EVENT]
        assert audit.latest_for(["p1", "nope"]) == {"p1": records[-1]}
        _assert_intact(audit)

    def test_recovery_records_its_restore(self, world: ContractWorld, audit: AuditChain) -> None:
        """Facts §4.6: recovery rolling an undelivered claim back appends ``restored``; one it
        finalizes appends nothing."""
        world.bundle_in_new_session("p1")
        assert claim(world, "p1").claimed
        assert world.claims.reconcile_undelivered().restored == ("p1",)
        assert [_body(r)["event"] for r in _records(audit, "")] == [
            RESOLVED_EVENT,
            RESTORED_EVENT,
        ]
        _assert_intact(audit)

    def test_racing_claims_keep_one_linear_chain(
        self, world: ContractWorld, audit: AuditChain
    ) -> None:
        """Concurrent winners in one workspace never fork the chain: seq 1..n, each linked."""
        workspace = world.workspace()
        names = [f"p{r}-{b}" for r in range(RACERS) for b in range(BUNDLES_PER_RACER)]
        bundles = {n: world.bundle_in_new_session(n, workspace_id=workspace.id) for n in names}

        def claim_share(racer: int) -> None:
            for n in names[racer * BUNDLES_PER_RACER : (racer + 1) * BUNDLES_PER_RACER]:
                answers: dict[str, Answer] = answers_for(bundles[n])
                assert world.claims.complete_active_bundle(n, ANSWERED, answers).claimed

        race(RACERS, claim_share)
        records = _records(audit, workspace.id)
        assert [r.seq for r in records] == list(range(1, len(names) + 1))
        assert sorted(r.pending_id for r in records) == sorted(names)
        assert len({r.prev_hash for r in records}) == len(records)  # no fork
        _assert_intact(audit)


__all__ = ["AuditChainContract"]
