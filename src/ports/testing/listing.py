"""Contract suite for ``ClaimRepository.list_active_bundles`` (spec L1–L16, M5, M5a, D6;
upstream facts §7 with the §9.13/§9.14 fixes)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from clarion.domain.listing import ListPage, ListQuery, Visibility
from clarion.domain.model import ANSWERED, EXPIRED, PENDING, REJECTED, SessionState
from clarion.domain.rows import Bundle
from clarion.ports.testing.world import ContractWorld, row_metadata, sample_question

EVERYTHING = Visibility.everything()


def page(
    world: ContractWorld,
    visibility: Visibility = EVERYTHING,
    *,
    limit: int = 50,
    workspace_id: str = "",
    created_since: datetime | None = None,
    after: tuple[datetime, str] | None = None,
) -> ListPage:
    return world.claims.list_active_bundles(
        ListQuery(
            visibility=visibility,
            limit=limit,
            workspace_id=workspace_id,
            created_since=created_since,
            after=after,
        )
    )


def listed_ids(world: ContractWorld, visibility: Visibility = EVERYTHING, **kw: Any) -> list[str]:
    return [bundle.pending_id for bundle in page(world, visibility, **kw).bundles]


def position(bundle: Bundle) -> tuple[datetime, str]:
    return (bundle.created_at, bundle.pending_id)


class ListActiveBundlesContract:
    """The list query. Subclass and provide a ``world`` fixture."""

    def test_a_listed_bundle_carries_every_field_in_question_order(
        self, world: ContractWorld
    ) -> None:
        """L3, L4, L5, D1."""
        session = world.session()
        bundle = world.ask(session.id, "p-1", questions=2, context="why")
        (listed,) = page(world).bundles
        assert listed.pending_id == "p-1"
        assert listed.task_id == session.task_id
        assert listed.session_id == session.id
        assert listed.created_at == min(row.created_at for row in bundle.rows)
        assert listed.context == "why"
        assert [q.question_id for q in listed.questions] == ["q1", "q2"]
        for listed_question, number in zip(listed.questions, (1, 2), strict=True):
            expected = sample_question(number)
            assert listed_question.title == expected.title
            assert listed_question.prompt == expected.prompt
            assert listed_question.options == expected.options
            assert listed_question.status == PENDING

    def test_questions_follow_d2_and_an_absent_status_reads_pending(
        self, world: ContractWorld
    ) -> None:
        """L5 with a legacy row order; L4a: absent status is reported as ``pending``."""
        session = world.session()
        world.raw_row(session.id, row_metadata("p-1", question_id="second", index=1))
        world.raw_row(session.id, row_metadata("p-1", question_id="first", index=0, status=None))
        (listed,) = page(world).bundles
        assert [q.question_id for q in listed.questions] == ["first", "second"]
        assert [q.status for q in listed.questions] == [PENDING, PENDING]

    def test_scoped_pages_are_full_across_visible_workspaces(self, world: ContractWorld) -> None:
        """L1a: visibility is a predicate before the limit, so ``limit`` counts bundles."""
        one, two = world.workspace("one", "me"), world.workspace("two", "")
        hidden = world.workspace("hidden", "someone-else")
        for pending_id, workspace in (
            ("b1", one),
            ("h1", hidden),
            ("h2", hidden),
            ("b2", two),
            ("h3", hidden),
            ("b3", one),
            ("b4", two),
        ):
            world.bundle_in_new_session(pending_id, workspace_id=workspace.id)
        mine = Visibility.only({one.id, two.id})
        first = page(world, mine, limit=3)
        assert [b.pending_id for b in first.bundles] == ["b1", "b2", "b3"]
        assert first.has_more
        last = first.bundles[-1]
        rest = page(world, mine, limit=3, after=(last.created_at, last.pending_id))
        assert [b.pending_id for b in rest.bundles] == ["b4"]
        assert not rest.has_more

    def test_an_empty_visible_set_still_lists_unowned_task_bundles(
        self, world: ContractWorld
    ) -> None:
        """L1b: no workspace term, no short-circuit; disjuncts 1 and 2 still apply."""
        owned = world.workspace("owned", "someone-else")
        world.bundle_in_new_session("empty-ws")
        world.bundle_in_new_session("dangling", workspace_id="deleted-workspace")
        world.bundle_in_new_session("hidden", workspace_id=owned.id)
        assert listed_ids(world, Visibility.only(frozenset())) == ["empty-ws", "dangling"]

    def test_visibility_is_the_three_way_disjunction_of_authorize_task(
        self, world: ContractWorld
    ) -> None:
        """L1c: empty workspace, dangling workspace, or a visible one; unscoped sees all."""
        mine = world.workspace("mine", "me")
        theirs = world.workspace("theirs", "them")
        world.bundle_in_new_session("visible", workspace_id=mine.id)
        world.bundle_in_new_session("hidden", workspace_id=theirs.id)
        world.bundle_in_new_session("empty-ws")
        world.bundle_in_new_session("dangling", workspace_id="no-such-workspace")
        scoped = Visibility.only({mine.id})
        assert listed_ids(world, scoped) == ["visible", "empty-ws", "dangling"]
        assert listed_ids(world) == ["visible", "hidden", "empty-ws", "dangling"]

    def test_the_workspace_filter_only_narrows(self, world: ContractWorld) -> None:
        """L7, L7a: AND-ed with visibility; a hidden workspace is an empty result; a dangling
        id returns its dangling bundles; "" means "not supplied"."""
        mine = world.workspace("mine", "me")
        theirs = world.workspace("theirs", "them")
        world.bundle_in_new_session("mine-1", workspace_id=mine.id)
        world.bundle_in_new_session("theirs-1", workspace_id=theirs.id)
        world.bundle_in_new_session("empty-ws")
        world.bundle_in_new_session("dangling", workspace_id="ghost")
        scoped = Visibility.only({mine.id})
        assert listed_ids(world, scoped, workspace_id=mine.id) == ["mine-1"]
        assert listed_ids(world, scoped, workspace_id=theirs.id) == []
        assert listed_ids(world, workspace_id=theirs.id) == ["theirs-1"]
        assert listed_ids(world, scoped, workspace_id="ghost") == ["dangling"]
        assert listed_ids(world, scoped, workspace_id="") == ["mine-1", "empty-ws", "dangling"]

    def test_created_since_is_inclusive(self, world: ContractWorld) -> None:
        """L8."""
        world.bundle_in_new_session("old")
        middle = world.bundle_in_new_session("middle")
        world.bundle_in_new_session("new")
        assert listed_ids(world, created_since=middle.created_at) == ["middle", "new"]
        later = middle.created_at + timedelta(microseconds=1)
        assert listed_ids(world, created_since=later) == ["new"]

    def test_a_cursor_walk_returns_every_bundle_once_in_order_through_ties(
        self, world: ContractWorld
    ) -> None:
        """L6, L9: keyset ``(created_at, pending_id)``, strictly after the cursor."""
        world.bundle_in_new_session("first")
        world.clock.set(world.clock.peek() + timedelta(seconds=1), step=timedelta(0))
        for pending_id in ("tie-c", "tie-a", "tie-b"):
            world.bundle_in_new_session(pending_id)
        world.clock.set(world.clock.peek() + timedelta(seconds=1), step=timedelta(milliseconds=1))
        world.bundle_in_new_session("last")
        seen: list[str] = []
        after: tuple[datetime, str] | None = None
        for _ in range(5):  # bounded: an implementation ignoring the cursor must fail, not hang
            current = page(world, limit=2, after=after)
            seen.extend(b.pending_id for b in current.bundles)
            if not current.has_more:
                break
            after = (current.bundles[-1].created_at, current.bundles[-1].pending_id)
        assert seen == ["first", "tie-a", "tie-b", "tie-c", "last"]
        tie = world.bundle("tie-a").created_at
        assert listed_ids(world, after=(tie, "tie-a")) == ["tie-b", "tie-c", "last"]

    def test_limit_counts_returned_bundles_and_below_one_means_the_default(
        self, world: ContractWorld
    ) -> None:
        """L10: the repository clamps like the surfaces do."""
        for pending_id in ("a", "b", "c"):
            world.bundle_in_new_session(pending_id)
        one = page(world, limit=1)
        assert [b.pending_id for b in one.bundles] == ["a"]
        assert one.has_more
        assert [b.pending_id for b in page(world, limit=3).bundles] == ["a", "b", "c"]
        assert not page(world, limit=3).has_more
        default = page(world, limit=0)
        assert len(default.bundles) == 3
        assert not default.has_more

    def test_an_empty_result_is_an_empty_page(self, world: ContractWorld) -> None:
        """L11."""
        world.session()
        assert page(world) == ListPage(bundles=(), has_more=False)
        assert page(world).next_cursor == ""

    def test_a_mixed_bundle_is_listed_with_each_row_status(self, world: ContractWorld) -> None:
        """L12; D4a: an all-terminal legacy bundle is not listed."""
        session = world.session()
        world.raw_row(session.id, row_metadata("mixed", question_id="q1", index=0, status=ANSWERED))
        world.raw_row(session.id, row_metadata("mixed", question_id="q2", index=1))
        world.raw_row(session.id, row_metadata("done", question_id="q1", index=0, status=ANSWERED))
        world.raw_row(session.id, row_metadata("done", question_id="q2", index=1, status=REJECTED))
        (listed,) = page(world).bundles
        assert listed.pending_id == "mixed"
        assert [q.status for q in listed.questions] == [ANSWERED, PENDING]

    def test_cursor_and_created_since_intersect(self, world: ContractWorld) -> None:
        """L14."""
        first = world.bundle_in_new_session("a")
        second = world.bundle_in_new_session("b")
        world.bundle_in_new_session("c")
        assert listed_ids(world, created_since=second.created_at, after=position(first)) == [
            "b",
            "c",
        ]
        assert listed_ids(world, created_since=first.created_at, after=position(second)) == ["c"]

    def test_an_unparseable_question_is_listed_with_empty_fields(
        self, world: ContractWorld
    ) -> None:
        """L15, L4a."""
        session = world.session()
        world.raw_row(session.id, row_metadata("p-1", question="not an object"))
        (listed,) = page(world).bundles
        (question,) = listed.questions
        assert (question.question_id, question.title, question.prompt) == ("q1", "", "")
        assert question.options == ()

    def test_a_bundle_with_any_row_missing_its_question_id_is_not_listed(
        self, world: ContractWorld
    ) -> None:
        """L16; a nested-only id counts as present (fixes §9.13 by answering it too)."""
        session = world.session()
        world.raw_row(session.id, row_metadata("broken", question_id="q1", index=0))
        world.raw_row(
            session.id, row_metadata("broken", question_id=None, question={"prompt": "?"}, index=1)
        )
        world.raw_row(session.id, row_metadata("nested", question_id="", question={"id": "n1"}))
        (listed,) = page(world).bundles
        assert listed.pending_id == "nested"
        assert [q.question_id for q in listed.questions] == ["n1"]

    def test_a_legacy_bundle_is_listed_under_its_sessions_task(self, world: ContractWorld) -> None:
        """M5: row task id "" resolves to the session's task, and L1c judges that task."""
        mine = world.workspace("mine", "me")
        theirs = world.workspace("theirs", "them")
        visible = world.session(workspace_id=mine.id)
        hidden = world.session(workspace_id=theirs.id)
        world.raw_row(visible.id, row_metadata("legacy-mine"), task_id="")
        world.raw_row(hidden.id, row_metadata("legacy-theirs"), task_id="")
        (listed,) = page(world, Visibility.only({mine.id})).bundles
        assert (listed.pending_id, listed.task_id) == ("legacy-mine", visible.task_id)

    def test_a_bundle_whose_task_does_not_exist_is_never_listed(self, world: ContractWorld) -> None:
        """M5a: the task join is inner, for unscoped callers too."""
        session = world.session()
        world.raw_row(session.id, row_metadata("orphan"), task_id="no-such-task")
        world.ask(session.id, "fine")
        assert listed_ids(world) == ["fine"]
        assert listed_ids(world, Visibility.only(frozenset())) == ["fine"]

    def test_inactive_bundles_are_not_listed(self, world: ContractWorld) -> None:
        """L2a: superseded and terminal-session bundles, expired, resolved and unknown-status
        ones are all absent — the activeness predicate, not a status filter."""
        superseded = world.session()
        world.ask(superseded.id, "superseded")
        world.host.start_turn(superseded.id)
        for state in sorted(SessionState.TERMINAL):
            ended = world.session()
            world.ask(ended.id, f"ended-{state}")
            world.host.set_session_state(ended.id, state)
        expired = world.session()
        world.ask(expired.id, "expired")
        world.claims.expire_active_bundle(expired.id, "expired")
        answered = world.bundle_in_new_session("answered")
        world.claims.complete_active_bundle(answered.pending_id, REJECTED, None)
        odd = world.session()
        world.raw_row(odd.id, row_metadata("unknown-status", status="waiting"))
        world.bundle_in_new_session("active")
        assert listed_ids(world) == ["active"]
        assert world.bundle("expired").rows[0].status == EXPIRED

    def test_a_malformed_bundle_is_not_listed(self, world: ContractWorld) -> None:
        """Fixes upstream §9.14: the list applies the claim's malformed guard."""
        session = world.session()
        world.raw_row(session.id, row_metadata("split", question_id="q1"))
        world.raw_row(session.id, {"pending_id": "split"}, type="permission_request")
        other = world.session()
        world.raw_row(session.id, row_metadata("two-sessions", question_id="q1", index=0))
        world.raw_row(other.id, row_metadata("two-sessions", question_id="q2", index=1))
        world.ask(other.id, "fine")
        assert listed_ids(world) == ["fine"]

    def test_l6_follows_the_rows_that_remain_after_a_sharing_session_is_deleted(
        self, world: ContractWorld
    ) -> None:
        """D1 over the remaining rows: deleting the task of a session that shared a pending id
        (a malformed bundle) leaves a well-formed bundle, ordered by its own rows' time."""
        doomed = world.session()
        world.raw_row(doomed.id, row_metadata("shared"))
        middle = world.session()
        world.ask(middle.id, "middle")
        keeper = world.session()
        world.raw_row(keeper.id, row_metadata("shared"))
        assert [b.pending_id for b in page(world).bundles] == ["middle"]
        assert world.host.delete_task(doomed.task_id)
        assert [b.pending_id for b in page(world).bundles] == ["middle", "shared"]
        (first,) = page(world, limit=1).bundles
        assert first.pending_id == "middle"
        after = page(world, after=(first.created_at, first.pending_id))
        assert [b.pending_id for b in after.bundles] == ["shared"]

    def test_pages_are_not_snapshots(self, world: ContractWorld) -> None:
        """D6: a bundle resolved between pages disappears without shifting the others; one
        created before the cursor (clock moved back) is seen only by a cursor-less call."""
        for pending_id in ("a", "b", "c", "d"):
            world.bundle_in_new_session(pending_id)
        first = page(world, limit=2)
        cursor = position(world.bundle("b"))
        world.claims.complete_active_bundle("c", REJECTED, None)
        world.clock.set(world.bundle("a").created_at - timedelta(seconds=1))
        world.bundle_in_new_session("early")
        assert [b.pending_id for b in first.bundles] == ["a", "b"]
        assert listed_ids(world, limit=2, after=cursor) == ["d"]
        assert listed_ids(world) == ["early", "a", "b", "d"]

    def test_a_restored_bundle_is_listed_again(self, world: ContractWorld) -> None:
        bundle = world.bundle_in_new_session("p-1")
        won = world.claims.complete_active_bundle("p-1", REJECTED, None)
        assert listed_ids(world) == []
        world.claims.restore_active_bundle("p-1", REJECTED, won.claimed_ids)
        assert listed_ids(world) == [bundle.pending_id]
