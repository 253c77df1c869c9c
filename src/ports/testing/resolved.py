"""Contract suite for who resolved a bundle (issue #20): the claim's own write records the
resolver, a loser never does, finalize keeps the record, a restore drops it, and rows resolved
before it was recorded read as "unknown"."""

from __future__ import annotations

from clarion.domain.model import ANSWERED, REJECTED
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface
from clarion.domain.rows import Bundle, MessageRecord
from clarion.ports.claims import ClaimResult
from clarion.ports.testing.racing import race
from clarion.ports.testing.world import ContractWorld, answers_for, claim, row_metadata

ALICE_REST = ResolvedBy("alice", IdentityKind.USER, "Alice", Surface.REST)
AGENT_MCP = ResolvedBy("bob", IdentityKind.AGENT, "agent of session s", Surface.MCP)
RESOLVER_RACERS = 6


def racer_resolver(racer: int) -> ResolvedBy:
    surface = (Surface.REST, Surface.MCP, Surface.INBOX)[racer % 3]
    return ResolvedBy(f"racer-{racer}", IdentityKind.USER, f"Racer {racer}", surface)


def legacy_answered_row(world: ContractWorld, session_id: str, pending_id: str) -> MessageRecord:
    """An answered row as written before resolvers were recorded (none stored with it)."""
    answer = {"question_id": "q1", "selected_options": ["q1_opt1"]}
    return world.raw_row(session_id, row_metadata(pending_id, status=ANSWERED, response=answer))


def _answer(
    world: ContractWorld, bundle: Bundle, resolver: ResolvedBy, choice: int = 1
) -> ClaimResult:
    """Answer every question of ``bundle`` with its option ``choice``, as ``resolver``."""
    return world.claims.complete_active_bundle(
        bundle.pending_id, ANSWERED, answers_for(bundle, choice), resolved_by=resolver
    )


def _race(world: ContractWorld, bundle: Bundle) -> list[ClaimResult]:
    """Every racer claims ``bundle`` at once, each as a different resolver."""
    return race(
        RESOLVER_RACERS,
        lambda racer: _answer(world, bundle, racer_resolver(racer), 1 + racer % 2),
    )


class ResolvedByContract:
    """The resolver record of :meth:`ClaimRepository.complete_active_bundle`."""

    def test_the_claim_records_its_resolver_on_every_claimed_row_at_the_claim_time(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        bundle = world.ask(session.id, "p-1", questions=2)
        result = _answer(world, bundle, ALICE_REST)
        assert result.claimed
        assert result.responded_at is not None
        expected = ALICE_REST.stamped(result.responded_at)
        assert [row.resolved_by for row in result.rows] == [expected, expected]
        assert [row.resolved_by for row in world.bundle("p-1").rows] == [expected, expected]

    def test_a_rejection_records_its_resolver_too(self, world: ContractWorld) -> None:
        session = world.session()
        world.ask(session.id, "p-1")
        result = world.claims.complete_active_bundle("p-1", REJECTED, None, resolved_by=AGENT_MCP)
        assert result.responded_at is not None
        [row] = world.bundle("p-1").rows
        assert row.resolved_by == AGENT_MCP.stamped(result.responded_at)

    def test_pending_rows_have_no_resolver(self, world: ContractWorld) -> None:
        session = world.session()
        world.ask(session.id, "p-1")
        assert [row.resolved_by for row in world.bundle("p-1").rows] == [None]

    def test_a_claim_without_a_record_and_a_legacy_resolved_row_read_as_unknown(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1")
        result = claim(world, "p-1")
        assert result.responded_at is not None
        [row] = world.bundle("p-1").rows
        assert row.resolved_by == ResolvedBy.unknown(result.responded_at)
        legacy = legacy_answered_row(world, session.id, "p-2")
        [old] = world.bundle("p-2").rows
        assert old.resolved_by == ResolvedBy.unknown(legacy.updated_at)

    def test_a_loser_writes_no_resolver(self, world: ContractWorld) -> None:
        session = world.session()
        bundle = world.ask(session.id, "p-1")
        won = _answer(world, bundle, ALICE_REST)
        lost = _answer(world, bundle, AGENT_MCP, 2)
        assert won.claimed
        assert not lost.claimed
        assert won.responded_at is not None
        [row] = world.bundle("p-1").rows
        assert row.resolved_by == ALICE_REST.stamped(won.responded_at)

    def test_finalize_keeps_the_record_and_a_restore_drops_it(self, world: ContractWorld) -> None:
        session = world.session()
        bundle = world.ask(session.id, "p-1")
        first = _answer(world, bundle, ALICE_REST)
        assert world.claims.restore_active_bundle("p-1", ANSWERED, first.claimed_ids)
        [restored] = world.bundle("p-1").rows
        assert restored.resolved_by is None
        assert restored.is_pending
        second = _answer(world, bundle, AGENT_MCP, 2)
        assert second.responded_at is not None
        assert world.claims.finalize_delivery("p-1", ANSWERED, second.claimed_ids)
        [row] = world.bundle("p-1").rows
        assert row.resolved_by == AGENT_MCP.stamped(second.responded_at)

    def test_among_concurrent_claims_only_the_winners_resolver_is_recorded(
        self, world: ContractWorld
    ) -> None:
        """R1 with the record: whoever wins, the stored resolver is the winner's."""
        for round_number in range(3):
            pending_id = f"race-{round_number}"
            bundle = world.bundle_in_new_session(pending_id, questions=2)
            results = _race(world, bundle)
            winners = [n for n, result in enumerate(results) if result.claimed]
            assert len(winners) == 1, results
            won = results[winners[0]]
            assert won.responded_at is not None
            expected = racer_resolver(winners[0]).stamped(won.responded_at)
            assert {row.resolved_by for row in world.bundle(pending_id).rows} == {expected}


__all__ = ["ResolvedByContract"]
