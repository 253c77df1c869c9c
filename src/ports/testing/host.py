"""Contract suite for :class:`clarion.ports.HostRepository`."""

from __future__ import annotations

from datetime import timedelta

import pytest

from clarion.domain.errors import NotFound
from clarion.domain.model import SessionState
from clarion.ports.testing.world import ContractWorld, row_metadata


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
