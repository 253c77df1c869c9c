"""Contract suite for :class:`clarion.ports.HostRepository`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

import pytest

from clarion.domain.cursor import decode_cursor
from clarion.domain.errors import NotFound
from clarion.domain.listing import Visibility
from clarion.domain.model import SessionState
from clarion.domain.paging import Page, PageRequest
from clarion.ports.testing.world import ContractWorld, row_metadata

T = TypeVar("T")


def walk(fetch: Callable[[PageRequest], Page[T]], size: int) -> list[T]:
    """Every item of a paged list, following ``next_cursor`` with pages of ``size``; every
    page but the last is full, and the last one says so with an empty cursor."""
    items: list[T] = []
    after = None
    for _ in range(1000):
        page = fetch(PageRequest(size, after))
        items.extend(page.items)
        if not page.next_cursor:
            return items
        assert len(page.items) == size
        after = decode_cursor(page.next_cursor)
    raise AssertionError("the cursor never reached the end")


class HostRepositoryContract:
    """Workspaces, tasks, sessions, turns and the transcript. Provide a ``world`` fixture."""

    def test_workspaces_are_stored_with_the_clock_and_listed_oldest_first(
        self, world: ContractWorld
    ) -> None:
        stamp = world.clock.peek()
        first = world.host.create_workspace("first")
        second = world.host.create_workspace("second", owner_id="u1")
        assert first.created_at == stamp
        assert first.owner_id == ""
        assert world.host.get_workspace(second.id) == second
        assert world.host.list_workspaces() == (first, second)
        assert first.id != second.id

    def test_an_owner_has_one_agents_workspace_found_by_its_key(self, world: ContractWorld) -> None:
        """#29 S6: insert-or-get per owner; a workspace merely named "Agents" is not it."""
        look_alike = world.host.create_workspace("Agents", "alice")
        alices = world.host.agents_workspace("alice", "Agents")
        assert alices != look_alike
        assert (alices.name, alices.owner_id) == ("Agents", "alice")
        assert world.host.get_workspace(alices.id) == alices
        assert world.host.agents_workspace("alice", "Renamed") == alices
        unowned = world.host.agents_workspace("", "Agents")
        bobs = world.host.agents_workspace("bob", "Agents")
        assert (unowned.owner_id, bobs.owner_id) == ("", "bob")
        assert len({alices.id, unowned.id, bobs.id, look_alike.id}) == 4
        assert world.host.agents_workspace("", "Agents") == unowned
        assert len(world.host.list_workspaces()) == 4

    def test_missing_rows_read_as_none_or_empty(self, world: ContractWorld) -> None:
        assert world.host.get_workspace("nope") is None
        assert world.host.get_task("nope") is None
        assert world.host.get_session("nope") is None
        assert world.host.current_turn("nope") is None
        assert world.host.complete_current_turn("nope") is None
        assert world.host.list_messages("nope") == ()
        assert world.host.sessions_for_tasks(["nope"]) == {}
        assert world.host.set_session_state("nope", SessionState.FAILED) is None

    def test_a_task_is_read_with_the_workspace_it_names(self, world: ContractWorld) -> None:
        workspace = world.workspace("mine", "alice")
        placed = world.host.create_task("placed", workspace.id)
        loose = world.host.create_task("loose")
        dangling = world.host.create_task("dangling", "no-such-workspace")
        assert world.host.get_task_and_workspace(placed.id) == (placed, workspace)
        assert world.host.get_task_and_workspace(loose.id) == (loose, None)
        assert world.host.get_task_and_workspace(dangling.id) == (dangling, None)
        assert world.host.get_task_and_workspace("nope") is None

    def test_tasks_may_have_an_empty_or_dangling_workspace_and_filter_by_workspace(
        self, world: ContractWorld
    ) -> None:
        workspace = world.workspace()
        loose = world.host.create_task("loose")
        dangling = world.host.create_task("dangling", "no-such-workspace")
        placed = world.host.create_task("placed", workspace.id)
        assert loose.workspace_id == ""
        assert world.host.get_task(dangling.id) == dangling
        assert world.host.list_tasks() == (loose, dangling, placed)
        assert world.host.list_tasks(workspace.id) == (placed,)

    def test_a_new_session_runs_with_one_current_turn(self, world: ContractWorld) -> None:
        task = world.task()
        session, turn = world.host.create_session(task.id, is_primary=True, agent_token_hash="abc")
        assert session.state == SessionState.RUNNING
        assert session.task_id == task.id
        assert session.is_primary
        assert session.agent_token_hash == "abc"
        assert world.host.get_session(session.id) == session
        assert world.host.current_turn(session.id) == turn
        assert turn.session_id == session.id
        assert turn.completed_at is None

    def test_a_session_needs_an_existing_task(self, world: ContractWorld) -> None:
        with pytest.raises(NotFound):
            world.host.create_session("no-such-task")

    def test_sessions_for_tasks_groups_them_oldest_first(self, world: ContractWorld) -> None:
        busy, idle, other = world.task(), world.task(), world.task()
        first = world.session(busy.id)
        second = world.session(busy.id, is_primary=True)
        lone = world.session(other.id)
        grouped = world.host.sessions_for_tasks([busy.id, idle.id, other.id])
        assert grouped == {busy.id: (first, second), other.id: (lone,)}

    def test_session_state_changes_and_compare_and_set(self, world: ContractWorld) -> None:
        session = world.session()
        waiting = world.host.set_session_state(
            session.id, SessionState.WAITING_FOR_INPUT, expected={SessionState.RUNNING}
        )
        assert waiting is not None
        assert waiting.state == SessionState.WAITING_FOR_INPUT
        refused = world.host.set_session_state(
            session.id, SessionState.COMPLETED, expected={SessionState.RUNNING}
        )
        assert refused is None
        current = world.host.get_session(session.id)
        assert current is not None
        assert current.state == SessionState.WAITING_FOR_INPUT
        done = world.host.set_session_state(session.id, SessionState.COMPLETED)
        assert done is not None
        assert done.state == SessionState.COMPLETED

    def test_a_newer_turn_becomes_current_and_a_completed_turn_stays_current(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        completed = world.host.complete_current_turn(session.id)
        assert completed is not None
        assert completed.completed_at is not None
        assert world.host.current_turn(session.id) == completed
        again = world.host.complete_current_turn(session.id)
        assert again == completed
        newer = world.host.start_turn(session.id)
        assert world.host.current_turn(session.id) == newer
        with pytest.raises(NotFound):
            world.host.start_turn("no-such-session")

    def test_the_current_turn_is_newest_by_started_at_then_id(self, world: ContractWorld) -> None:
        """D4's turn order: ``started_at`` first (not insertion), ``id`` breaks ties."""
        session = world.session()
        current = world.turn(session.id)
        world.clock.set(current.started_at - timedelta(seconds=5))
        world.host.start_turn(session.id)  # started earlier, so not current
        assert world.host.current_turn(session.id) == current
        tie = current.started_at + timedelta(seconds=5)
        world.clock.set(tie, step=timedelta(0))
        tied = [world.host.start_turn(session.id) for _ in range(3)]
        assert world.host.current_turn(session.id) == max(tied, key=lambda t: t.id)

    def test_messages_are_appended_with_copied_metadata_and_listed_in_order(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        turn = world.turn(session.id)
        metadata = {"nested": {"k": "v"}}
        first = world.host.append_message(
            session.id, turn_id=turn.id, content="hello", metadata=metadata
        )
        metadata["nested"]["k"] = "changed"
        second = world.raw_row(session.id, row_metadata("p-1"), task_id="")
        assert first.task_id == session.task_id
        assert second.task_id == ""
        assert (first.author_type, first.type, first.content) == ("user", "message", "hello")
        assert first.created_at == first.updated_at
        assert world.host.list_messages(session.id) == (first, second)
        assert world.host.list_messages(session.id)[0].metadata == {"nested": {"k": "v"}}

    def test_appending_needs_the_session_and_one_of_its_turns(self, world: ContractWorld) -> None:
        session, other = world.session(), world.session()
        with pytest.raises(NotFound):
            world.host.append_message("no-such", turn_id=world.turn(session.id).id, content="x")
        with pytest.raises(NotFound):
            world.host.append_message(session.id, turn_id=world.turn(other.id).id, content="x")

    def test_deleting_a_task_deletes_its_sessions_turns_and_messages(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1")
        survivor = world.session()
        world.ask(survivor.id, "p-2")
        assert world.host.delete_task(session.task_id)
        assert world.host.get_task(session.task_id) is None
        assert world.host.get_session(session.id) is None
        assert world.host.current_turn(session.id) is None
        assert world.host.list_messages(session.id) == ()
        assert world.claims.load_bundle("p-1") is None
        assert world.claims.load_bundle("p-2") is not None
        assert not world.host.delete_task(session.task_id)

    # -- keyset pages (issue #14: page size of every list) -----------------------------------

    def test_workspace_pages_hold_the_visible_set_in_created_at_id_order(
        self, world: ContractWorld
    ) -> None:
        """L1a evaluated by the store: the owner rule, an id set, or everything; ties on
        ``created_at`` are broken by id, and no page repeats or skips a workspace."""
        world.clock.set(world.clock.peek(), step=timedelta(0))  # one timestamp for all
        tied = [world.workspace(f"w{i}", owner) for i, owner in enumerate(["", "alice", "bob"])]
        world.clock.set(world.clock.peek() + timedelta(seconds=1), step=timedelta(milliseconds=1))
        later = [world.workspace(f"v{i}", owner) for i, owner in enumerate(["alice", "", "bob"])]
        ordered = sorted(tied + later, key=lambda w: (w.created_at, w.id))
        for size in (1, 2, 6, 7):
            everything = walk(
                lambda p: world.host.page_workspaces(Visibility.everything(), p), size
            )
            assert everything == ordered
            alice = walk(
                lambda p: world.host.page_workspaces(Visibility.owned_by("alice"), p), size
            )
            assert alice == [w for w in ordered if w.owner_id in ("", "alice")]
        chosen = Visibility.only([later[2].id, tied[0].id, "no-such-workspace"])
        assert walk(lambda p: world.host.page_workspaces(chosen, p), 1) == [tied[0], later[2]]
        nothing = world.host.page_workspaces(Visibility.only([]), PageRequest(5))
        assert nothing == Page(items=(), next_cursor="")

    def test_a_full_last_page_has_no_cursor(self, world: ContractWorld) -> None:
        first, second = world.workspace("a"), world.workspace("b")
        page = world.host.page_workspaces(Visibility.everything(), PageRequest(2))
        assert page == Page(items=(first, second), next_cursor="")
        page = world.host.page_workspaces(Visibility.everything(), PageRequest(1))
        assert page.items == (first,)
        assert decode_cursor(page.next_cursor) == (first.created_at, first.id)

    def test_task_pages_apply_l1c_with_each_task_workspace(self, world: ContractWorld) -> None:
        """L1c in the store: a task whose workspace is "", dangling or visible is listed; a
        foreign workspace's task is not; the workspace filter narrows (and a foreign
        workspace lists as empty)."""
        mine, theirs = world.workspace("mine", "alice"), world.workspace("theirs", "bob")
        shared = world.workspace("shared")
        world.clock.set(world.clock.peek(), step=timedelta(0))
        loose = world.task(title="loose")
        dangling = world.task("no-such-workspace", "dangling")
        placed = world.task(mine.id, "placed")
        foreign = world.task(theirs.id, "foreign")
        world.clock.set(world.clock.peek() + timedelta(seconds=1), step=timedelta(milliseconds=1))
        common = world.task(shared.id, "common")
        later = world.task(mine.id, "later")
        every = sorted(
            [loose, dangling, placed, foreign, common, later], key=lambda t: (t.created_at, t.id)
        )
        alice = Visibility.owned_by("alice")
        for size in (1, 2, 5, 6):
            assert walk(lambda p: world.host.page_tasks(Visibility.everything(), p), size) == every
            assert walk(lambda p: world.host.page_tasks(alice, p), size) == [
                t for t in every if t is not foreign
            ]
        assert walk(lambda p: world.host.page_tasks(alice, p, mine.id), 1) == [placed, later]
        assert walk(lambda p: world.host.page_tasks(alice, p, theirs.id), 1) == []
        assert walk(lambda p: world.host.page_tasks(alice, p, "no-such-workspace"), 1) == [dangling]
        ids = Visibility.only([theirs.id])
        assert walk(lambda p: world.host.page_tasks(ids, p), 2) == [
            t for t in every if t not in (placed, common, later)
        ]

    def test_message_pages_walk_the_transcript_and_filter_by_type(
        self, world: ContractWorld
    ) -> None:
        session, other = world.session(), world.session()
        turn = world.turn(session.id)
        world.clock.set(world.clock.peek(), step=timedelta(0))
        written = [
            world.host.append_message(
                session.id, turn_id=turn.id, content=f"m{i}", type="resume" if i % 2 else "message"
            )
            for i in range(5)
        ]
        world.host.append_message(other.id, turn_id=world.turn(other.id).id, content="elsewhere")
        ordered = sorted(written, key=lambda m: (m.created_at, m.id))
        for size in (1, 2, 5):
            assert walk(lambda p: world.host.page_messages(session.id, p), size) == ordered
        resumes = walk(lambda p: world.host.page_messages(session.id, p, "resume"), 1)
        assert resumes == [m for m in ordered if m.type == "resume"]
        assert world.host.page_messages("no-such", PageRequest(3)) == Page(items=())
