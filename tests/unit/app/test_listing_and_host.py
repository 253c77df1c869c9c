"""Listing (L1a, L9, L10, L13) and the reference host's operations (T1, T2, "Permissions")."""

from __future__ import annotations

import pytest

from clarion.adapters.memory import InMemoryTokenStore
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.host import AGENT_TOKEN_PREFIX, UNOWNED_WORKSPACE_USER, HostOperations
from clarion.app.usecases.runner import Runner
from clarion.domain.errors import InvalidArgument, NotFound
from clarion.domain.model import Identity, SessionState
from clarion.domain.resolved_by import Surface
from clarion.ports.resume import RESUME_MESSAGE_TYPE
from tests.unit.app.world import ALICE, BOB, UNSCOPED, AppWorld, answer_all, drafts, make_world

ADMIN = Identity.user("root", is_admin=True)

pytestmark = pytest.mark.anyio


@pytest.fixture(name="world")
def fixture_world() -> AppWorld:
    return make_world()


async def test_unparseable_created_since_is_named(world: AppWorld) -> None:
    """L13."""
    with pytest.raises(InvalidArgument) as error:
        await world.services.listing.list_pending(ALICE, created_since="yesterday")
    assert error.value.field == "created_since"


async def test_corrupt_cursor_is_named(world: AppWorld) -> None:
    """L13."""
    with pytest.raises(InvalidArgument) as error:
        await world.services.listing.list_pending(ALICE, cursor="not-valid!")
    assert error.value.field == "cursor"


async def test_listing_pages_through_visible_bundles_only(world: AppWorld) -> None:
    """L1a, L9, L10: limit counts returned bundles; the cursor continues after the page."""
    alice_sessions = [world.session("alice") for _ in range(3)]
    bob_session = world.session("bob")
    created = [
        await world.services.asking.create(ALICE, s.id, drafts(1), "") for s in alice_sessions
    ]
    await world.services.asking.create(BOB, bob_session.id, drafts(1), "")
    first = await world.services.listing.list_pending(ALICE, limit=2)
    assert [b.pending_id for b in first.bundles] == created[:2]
    assert first.has_more
    second = await world.services.listing.list_pending(ALICE, cursor=first.next_cursor, limit=2)
    assert [b.pending_id for b in second.bundles] == created[2:]
    assert second.next_cursor == ""
    everything = await world.services.listing.list_pending(UNSCOPED, limit=0)
    assert len(everything.bundles) == 4


async def test_created_since_and_workspace_filters_narrow_the_page(world: AppWorld) -> None:
    """L7, L8."""
    early = world.session("alice")
    await world.services.asking.create(ALICE, early.id, drafts(1), "")
    cutoff = world.clock.peek()
    late = world.session("alice")
    late_id = await world.services.asking.create(ALICE, late.id, drafts(1), "")
    page = await world.services.listing.list_pending(ALICE, created_since=cutoff.isoformat())
    assert [b.pending_id for b in page.bundles] == [late_id]
    task = world.host.get_task(late.task_id)
    assert task is not None
    page = await world.services.listing.list_pending(ALICE, workspace_id=task.workspace_id)
    assert [b.pending_id for b in page.bundles] == [late_id]


async def test_workspaces_are_created_and_listed_per_owner(world: AppWorld) -> None:
    mine = await world.services.host.create_workspace(ALICE, "mine")
    with pytest.raises(InvalidArgument) as unowned:
        await world.services.host.create_workspace(ALICE, "shared", owner_id="")
    assert unowned.value.field == "owner_id"
    shared = await world.services.host.create_workspace(ADMIN, "shared", owner_id="")
    theirs = await world.services.host.create_workspace(BOB, "theirs")
    assert (mine.owner_id, shared.owner_id, theirs.owner_id) == ("alice", "", "bob")
    with pytest.raises(InvalidArgument) as error:
        await world.services.host.create_workspace(ALICE, "stolen", owner_id="bob")
    assert error.value.field == "owner_id"
    visible = await world.services.host.list_workspaces(ALICE)
    assert [w.name for w in visible.items] == ["mine", "shared"]
    assert len((await world.services.host.list_workspaces(UNSCOPED)).items) == 3


async def test_tasks_only_go_into_visible_workspaces(world: AppWorld) -> None:
    theirs = await world.services.host.create_workspace(BOB, "theirs")
    with pytest.raises(NotFound):
        await world.services.host.create_task(ALICE, "t", theirs.id)
    with pytest.raises(InvalidArgument):
        await world.services.host.create_task(ALICE, "  ", "")
    task = await world.services.host.create_task(ALICE, "loose")
    assert task.workspace_id == ""


async def test_task_list_carries_the_pending_action_projection(world: AppWorld) -> None:
    """T1, T2: "clarification" for a blocked task and its primary session, else None."""
    blocked = world.session("alice", is_primary=True)
    idle = world.session("alice", is_primary=True)
    secondary = world.session("alice", is_primary=False)
    await world.services.asking.create(ALICE, blocked.id, drafts(1), "")
    await world.services.asking.create(ALICE, secondary.id, drafts(1), "")
    world.session("bob")
    views = {view.task.id: view for view in (await world.services.host.list_tasks(ALICE)).items}
    assert set(views) == {blocked.task_id, idle.task_id, secondary.task_id}
    assert views[blocked.task_id].task_pending_action == "clarification"
    assert views[blocked.task_id].primary_session_pending_action == "clarification"
    assert views[idle.task_id].task_pending_action is None
    assert views[idle.task_id].primary_session_pending_action is None
    assert views[secondary.task_id].task_pending_action == "clarification"
    assert views[secondary.task_id].primary_session_pending_action is None


async def test_session_creation_returns_a_token_that_authenticates_the_agent(
    world: AppWorld,
) -> None:
    owned = world.task("alice")
    created = await world.services.host.create_session(ALICE, owned.id, is_primary=True)
    assert created.session.state == SessionState.RUNNING
    assert created.turn.session_id == created.session.id
    assert created.agent_token.startswith(AGENT_TOKEN_PREFIX)
    assert created.agent_token not in created.session.agent_token_hash
    identity = await world.services.host.authenticate_agent(created.session.id, created.agent_token)
    assert identity == Identity.user("alice")
    with pytest.raises(NotFound):
        await world.services.host.authenticate_agent(created.session.id, "wrong")
    with pytest.raises(NotFound):
        await world.services.host.create_session(BOB, owned.id)
    loose = await world.services.host.create_task(UNSCOPED, "loose")
    unowned = await world.services.host.create_session(UNSCOPED, loose.id)
    agent = await world.services.host.authenticate_agent(unowned.session.id, unowned.agent_token)
    assert agent.user_id == UNOWNED_WORKSPACE_USER


async def test_resumes_for_a_session_are_read_from_the_outbox_records(world: AppWorld) -> None:
    """interfaces.md ``/sessions/{id}/resumes``: resume messages only, visible sessions only."""
    session = world.session("alice")
    turn = world.host.current_turn(session.id)
    assert turn is not None
    world.host.append_message(session.id, turn_id=turn.id, content="hello")
    world.host.append_message(
        session.id, turn_id=turn.id, content="resume prompt", type=RESUME_MESSAGE_TYPE
    )
    resumes = await world.services.host.resumes_for_session(ALICE, session.id)
    assert [m.content for m in resumes.items] == ["resume prompt"]
    assert len((await world.services.host.messages(ALICE, session.id)).items) == 2
    with pytest.raises(NotFound):
        await world.services.host.resumes_for_session(BOB, session.id)


async def test_workflow_guard_reports_an_active_bundle(world: AppWorld) -> None:
    """Facts §4.10."""
    session = world.session("alice")
    assert not await world.services.host.session_has_active_bundle(ALICE, session.id)
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    assert await world.services.host.session_has_active_bundle(ALICE, session.id)
    await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
    )
    assert not await world.services.host.session_has_active_bundle(ALICE, session.id)


async def test_with_a_user_directory_an_agent_acts_only_for_an_active_known_owner(
    world: AppWorld,
) -> None:
    """Issue 14: the owner an agent acts as must be an active user; unowned workspaces need
    none; a session in a terminal state refuses its token whatever the owner."""
    users = InMemoryTokenStore(world.store, world.clock, world.ids)
    host = HostOperations(
        host=world.host,
        claims=world.claims,
        authorizer=HostTaskAuthorizer(world.host),
        runner=Runner(world.services.limiter),
        users=users,
    )
    owner = users.create_user("ada")
    owned = await host.create_session(UNSCOPED, world.task(owner.id).id)
    stranger = await host.create_session(UNSCOPED, world.task("not-a-user").id)
    loose = await host.create_session(UNSCOPED, world.host.create_task("loose", "").id)
    assert await host.authenticate_agent(owned.session.id, owned.agent_token) == Identity.user(
        owner.id
    )
    assert (await host.authenticate_agent(loose.session.id, loose.agent_token)).user_id == (
        UNOWNED_WORKSPACE_USER
    )
    with pytest.raises(NotFound):
        await host.authenticate_agent(stranger.session.id, stranger.agent_token)
    users.deactivate_user(owner.id)
    with pytest.raises(NotFound):
        await host.authenticate_agent(owned.session.id, owned.agent_token)
    await world.services.lifecycle.set_session_state(
        UNSCOPED, loose.session.id, SessionState.CANCELLED
    )
    with pytest.raises(NotFound):
        await host.authenticate_agent(loose.session.id, loose.agent_token)


async def test_may_see_task_answers_the_authorizers_question_with_every_no_as_false(
    world: AppWorld,
) -> None:
    """The event stream's filter: a use-case method, not the authorizer port in an adapter."""
    mine, theirs = world.task("alice"), world.task("bob")
    may_see = world.services.listing.may_see_task
    assert await may_see(ALICE, mine.id)
    assert not await may_see(ALICE, theirs.id)
    assert not await may_see(ALICE, "no-such-task")
    assert not await may_see(ALICE, "")  # a bundle without a task (M5a)
    assert await may_see(UNSCOPED, theirs.id)
    assert await may_see(UNSCOPED, "")
