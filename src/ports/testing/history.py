"""Contract suite for :meth:`ClaimRepository.list_resolved_bundles` (issue #20): settled
bundles only, newest resolution first, the pending list's visibility (foreign ≡ absent), and
keyset paging that visits every bundle once — and, asked for (issue #30), the bundles closed
without an answer, with the reason and time derived from durable state."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from clarion.domain.history import (
    CANCELLED_REASON,
    EXPIRED_REASON,
    SESSION_ENDED,
    SUPERSEDED,
    ClosedBundle,
    ResolvedBundle,
    ResolvedPage,
    ResolvedQuery,
)
from clarion.domain.listing import Visibility
from clarion.domain.model import ANSWERED, REJECTED, SessionState
from clarion.domain.resolved_by import ResolvedBy
from clarion.ports.testing.resolved import AGENT_MCP, ALICE_REST, legacy_answered_row
from clarion.ports.testing.world import ContractWorld, answers_for

EVERYTHING = Visibility.everything()


def resolved_page(
    world: ContractWorld,
    visibility: Visibility = EVERYTHING,
    *,
    limit: int = 50,
    before: tuple[datetime, str] | None = None,
    since: datetime | None = None,
    closed: bool = False,
) -> ResolvedPage:
    query = ResolvedQuery(
        visibility=visibility,
        limit=limit,
        before=before,
        resolved_since=since,
        include_closed=closed,
    )
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
        assert isinstance(newest, ResolvedBundle)
        assert isinstance(new, ResolvedBundle)
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
        record = legacy_answered_row(world, session.id, "legacy")
        [listed] = resolved_page(world).bundles
        assert isinstance(listed, ResolvedBundle)
        assert listed.pending_id == "legacy"
        assert listed.resolved_by == ResolvedBy.unknown(record.updated_at)

    def test_a_restored_bundle_leaves_the_list(self, world: ContractWorld) -> None:
        world.bundle_in_new_session("p-1")
        result = world.claims.complete_active_bundle(
            "p-1", ANSWERED, answers_for(world.bundle("p-1")), resolved_by=ALICE_REST
        )
        assert world.claims.restore_active_bundle("p-1", ANSWERED, result.claimed_ids)
        assert resolved_ids(world) == []


def closed_entries(world: ContractWorld, **kwargs: Any) -> list[tuple[str, str, datetime]]:
    """(pending id, reason, closed at) of the closed entries of one page, in its order."""
    return [
        (bundle.pending_id, bundle.reason, bundle.closed_at)
        for bundle in resolved_page(world, closed=True, **kwargs).bundles
        if isinstance(bundle, ClosedBundle)
    ]


class ClosedHistoryContract:
    """Issue #30: bundles that left the pending list without an answer are history too, with
    their reason and time, read from durable state (supersession writes nothing, §4.4)."""

    def test_each_way_of_closing_is_listed_with_its_reason_and_time(
        self, world: ContractWorld
    ) -> None:
        superseded = world.bundle_in_new_session("superseded", questions=2)
        turn = world.host.start_turn(superseded.session_id)
        expired = world.bundle_in_new_session("expired")
        [expired_row] = world.claims.expire_active_bundle(expired.session_id, "expired")
        cancelled = world.bundle_in_new_session("cancelled")
        [cancelled_row] = world.claims.cancel_active_bundle(cancelled.session_id, "cancelled")
        ended = world.bundle_in_new_session("ended")  # terminal; the lifecycle expires it
        ended_session = world.host.set_session_state(ended.session_id, SessionState.COMPLETED)
        assert ended_session is not None
        [ended_row] = world.claims.expire_active_bundle(ended.session_id, "ended")
        unexpired = world.bundle_in_new_session("unexpired")  # terminal, no expiry written
        unexpired_session = world.host.set_session_state(unexpired.session_id, SessionState.FAILED)
        assert unexpired_session is not None
        world.bundle_in_new_session("still-pending")
        assert superseded.rows == world.bundle("superseded").rows  # nothing written (D4)
        assert sorted(closed_entries(world), key=lambda entry: entry[0]) == [
            ("cancelled", CANCELLED_REASON, cancelled_row.updated_at),
            ("ended", SESSION_ENDED, ended_row.updated_at),
            ("expired", EXPIRED_REASON, expired_row.updated_at),
            ("superseded", SUPERSEDED, turn.started_at),
            ("unexpired", SESSION_ENDED, unexpired_session.updated_at),
        ]
        assert resolved_ids(world) == []  # closed bundles only when asked for
        [listed] = [
            b for b in resolved_page(world, closed=True).bundles if b.pending_id == "superseded"
        ]
        assert isinstance(listed, ClosedBundle)
        assert [q.question_id for q in listed.questions] == ["q1", "q2"]
        assert listed.session_id == superseded.session_id

    def test_a_bundle_expired_before_its_session_ended_stays_expired(
        self, world: ContractWorld
    ) -> None:
        bundle = world.bundle_in_new_session("p-1")
        [row] = world.claims.expire_active_bundle(bundle.session_id, "p-1")
        world.clock.advance(timedelta(minutes=1))
        assert world.host.set_session_state(bundle.session_id, SessionState.COMPLETED)
        world.host.start_turn(bundle.session_id)
        assert closed_entries(world) == [("p-1", EXPIRED_REASON, row.updated_at)]

    def test_answered_in_flight_and_active_bundles_are_not_closed(
        self, world: ContractWorld
    ) -> None:
        answered = world.bundle_in_new_session("answered")
        settle(world, "answered")
        world.host.start_turn(answered.session_id)  # the answer stands, superseded or not
        in_flight = world.bundle_in_new_session("in-flight")
        claimed = world.claims.complete_active_bundle(
            "in-flight", ANSWERED, answers_for(world.bundle("in-flight"))
        )
        assert claimed.claimed
        world.host.start_turn(in_flight.session_id)
        detached = world.bundle_in_new_session("detached")
        world.claims.detach_active_bundles(detached.session_id)
        page = resolved_page(world, closed=True)
        assert [b.pending_id for b in page.bundles] == ["answered"]

    def test_closed_bundles_keep_the_lists_visibility(self, world: ContractWorld) -> None:
        mine = world.workspace("mine", "me")
        theirs = world.workspace("theirs", "them")
        for pending_id, workspace_id in (("visible", mine.id), ("hidden", theirs.id)):
            bundle = world.bundle_in_new_session(pending_id, workspace_id=workspace_id)
            world.host.start_turn(bundle.session_id)
        assert [e[0] for e in closed_entries(world, visibility=Visibility.only({mine.id}))] == [
            "visible"
        ]
        assert [e[0] for e in closed_entries(world, visibility=Visibility.owned_by("them"))] == [
            "hidden"
        ]

    def test_keyset_pages_interleave_answered_and_closed_bundles_once_each(
        self, world: ContractWorld
    ) -> None:
        """One order for both kinds: (time, pending id) descending, ties split cleanly."""
        sessions = {p: world.bundle_in_new_session(p).session_id for p in "abcdef"}
        world.clock.set(world.clock.peek(), step=timedelta(0))  # one instant for every close
        settle(world, "a")
        world.host.start_turn(sessions["b"])
        world.claims.cancel_active_bundle(sessions["c"], "c")
        settle(world, "d")
        world.claims.expire_active_bundle(sessions["e"], "e")
        world.host.start_turn(sessions["f"])
        seen: list[str] = []
        before: tuple[datetime, str] | None = None
        while True:
            page = resolved_page(world, limit=2, before=before, closed=True)
            seen += [bundle.pending_id for bundle in page.bundles]
            if not page.has_more:
                break
            last = page.bundles[-1]
            before = (last.resolved_at, last.pending_id)
        assert seen == ["f", "e", "d", "c", "b", "a"]

    def test_since_applies_to_the_closing_time(self, world: ContractWorld) -> None:
        early = world.bundle_in_new_session("early")
        late = world.bundle_in_new_session("late")
        world.host.start_turn(early.session_id)
        world.clock.advance(timedelta(hours=1))
        cut = world.clock.peek()
        world.host.start_turn(late.session_id)
        assert [e[0] for e in closed_entries(world, since=cut)] == ["late"]


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


__all__ = ["ClosedHistoryContract", "PendingSummaryContract", "ResolvedListContract"]
