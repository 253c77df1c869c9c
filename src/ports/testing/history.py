"""Contract suite for :meth:`ClaimRepository.list_resolved_bundles` (issue #20): settled
bundles only, newest resolution first, the pending list's visibility (foreign ≡ absent), and
keyset paging that visits every bundle once."""

from __future__ import annotations

from datetime import datetime, timedelta

from clarion.domain.history import ResolvedPage, ResolvedQuery
from clarion.domain.listing import Visibility
from clarion.domain.model import ANSWERED, REJECTED
from clarion.domain.resolved_by import ResolvedBy
from clarion.ports.testing.resolved import AGENT_MCP, ALICE_REST
from clarion.ports.testing.world import ContractWorld, answers_for, row_metadata

EVERYTHING = Visibility.everything()


def resolved_page(
    world: ContractWorld,
    visibility: Visibility = EVERYTHING,
    *,
    limit: int = 50,
    before: tuple[datetime, str] | None = None,
    since: datetime | None = None,
) -> ResolvedPage:
    query = ResolvedQuery(visibility=visibility, limit=limit, before=before, resolved_since=since)
    return world.claims.list_resolved_bundles(query)


def resolved_ids(world: ContractWorld, visibility: Visibility = EVERYTHING) -> list[str]:
    return [bundle.pending_id for bundle in resolved_page(world, visibility).bundles]


def settle(world: ContractWorld, pending_id: str, resolved_by: ResolvedBy = ALICE_REST) -> None:
    """Claim ``pending_id`` (answered, option 1) and finalize its delivery."""
    result = world.claims.complete_active_bundle(
        pending_id, ANSWERED, answers_for(world.bundle(pending_id)), resolved_by=resolved_by
    )
    assert result.claimed
    assert world.claims.finalize_delivery(pending_id, ANSWERED, result.claimed_ids)


class ResolvedListContract:
    """The resolved list. Subclass and provide a ``world`` fixture."""

    def test_settled_bundles_are_listed_newest_first_with_outcome_and_resolver(
        self, world: ContractWorld
    ) -> None:
        for pending_id in ("old", "new", "pending", "in-flight", "rejected"):
            world.bundle_in_new_session(pending_id, questions=2)
        settle(world, "old")
        settle(world, "new", AGENT_MCP)
        claimed = world.claims.complete_active_bundle(
            "in-flight", ANSWERED, answers_for(world.bundle("in-flight"))
        )
        assert claimed.claimed  # the delivery marker is still set: not history yet
        rejected = world.claims.complete_active_bundle("rejected", REJECTED, None)
        assert world.claims.finalize_delivery("rejected", REJECTED, rejected.claimed_ids)
        page = resolved_page(world)
        assert [b.pending_id for b in page.bundles] == ["rejected", "new", "old"]
        assert not page.has_more
        newest, new, _ = page.bundles
        assert newest.resolution.status == REJECTED
        assert newest.resolution.rejected
        assert newest.resolved_by == ResolvedBy.unknown(newest.resolved_at)
        assert new.resolution.status == ANSWERED
        assert new.resolution.answers == tuple(answers_for(world.bundle("new")).values())
        assert new.resolved_by == AGENT_MCP.stamped(new.resolved_at)
        assert [q.question_id for q in new.questions] == ["q1", "q2"]
        assert new.resolved_at == world.bundle("new").rows[0].updated_at

    def test_visibility_is_the_pending_lists_and_foreign_is_absent(
        self, world: ContractWorld
    ) -> None:
        mine = world.workspace("mine", "me")
        theirs = world.workspace("theirs", "them")
        for pending_id, workspace_id in (
            ("visible", mine.id),
            ("hidden", theirs.id),
            ("empty-ws", ""),
            ("dangling", "no-such-workspace"),
        ):
            world.bundle_in_new_session(pending_id, workspace_id=workspace_id)
            settle(world, pending_id)
        assert resolved_ids(world, Visibility.only({mine.id})) == [
            "dangling",
            "empty-ws",
            "visible",
        ]
        assert resolved_ids(world, Visibility.owned_by("me")) == ["dangling", "empty-ws", "visible"]
        assert resolved_ids(world, Visibility.owned_by("them")) == [
            "dangling",
            "empty-ws",
            "hidden",
        ]
        assert resolved_ids(world) == ["dangling", "empty-ws", "hidden", "visible"]

    def test_keyset_pages_visit_every_resolved_bundle_once_across_ties(
        self, world: ContractWorld
    ) -> None:
        """Equal resolution times are ordered by pending id, descending, and split cleanly."""
        for pending_id in ("a", "b", "c", "d", "e"):
            world.bundle_in_new_session(pending_id)
        world.clock.set(world.clock.peek(), step=timedelta(0))  # every claim at one instant
        for pending_id in ("c", "a", "e", "b", "d"):
            settle(world, pending_id)
        seen: list[str] = []
        before: tuple[datetime, str] | None = None
        while True:
            page = resolved_page(world, limit=2, before=before)
            seen += [bundle.pending_id for bundle in page.bundles]
            if not page.has_more:
                break
            last = page.bundles[-1]
            before = (last.resolved_at, last.pending_id)
        assert seen == ["e", "d", "c", "b", "a"]

    def test_since_keeps_bundles_resolved_at_or_after_it(self, world: ContractWorld) -> None:
        world.bundle_in_new_session("early")
        world.bundle_in_new_session("late")
        settle(world, "early")
        world.clock.advance(timedelta(hours=1))
        cut = world.clock.peek()
        settle(world, "late")
        assert [b.pending_id for b in resolved_page(world, since=cut).bundles] == ["late"]

    def test_a_legacy_resolved_bundle_is_listed_with_an_unknown_resolver(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        record = world.raw_row(
            session.id,
            row_metadata(
                "legacy",
                status=ANSWERED,
                response={"question_id": "q1", "selected_options": ["q1_opt1"]},
            ),
        )
        [listed] = resolved_page(world).bundles
        assert listed.pending_id == "legacy"
        assert listed.resolved_by == ResolvedBy.unknown(record.updated_at)

    def test_a_restored_bundle_leaves_the_list(self, world: ContractWorld) -> None:
        world.bundle_in_new_session("p-1")
        result = world.claims.complete_active_bundle(
            "p-1", ANSWERED, answers_for(world.bundle("p-1")), resolved_by=ALICE_REST
        )
        assert world.claims.restore_active_bundle("p-1", ANSWERED, result.claimed_ids)
        assert resolved_ids(world) == []


class PendingSummaryContract:
    """:meth:`ClaimRepository.pending_summary`: the scrape-time gauges' one read."""

    def test_the_pending_summary_counts_active_bundles_and_dates_the_oldest(
        self, world: ContractWorld
    ) -> None:
        empty = world.claims.pending_summary()
        assert (empty.count, empty.oldest_created_at) == (0, None)
        first = world.bundle_in_new_session("first", questions=2)
        world.bundle_in_new_session("second")
        world.bundle_in_new_session("answered")
        settle(world, "answered")
        superseded = world.bundle_in_new_session("superseded")
        world.host.start_turn(superseded.session_id)
        summary = world.claims.pending_summary()
        assert summary.count == 2
        assert summary.oldest_created_at == first.created_at


__all__ = ["PendingSummaryContract", "ResolvedListContract"]
