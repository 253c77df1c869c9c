"""Issue #21: the task sessions ``/mcp/agent`` creates for agents that no host manages."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest

from clarion.app.usecases.agents import AgentSessions, agent_task_title
from clarion.domain.errors import InvalidQuestions, LimitExceeded, NotFound
from clarion.domain.model import Identity
from clarion.domain.questions import QuestionDraft
from tests.unit.app.world import ALICE, BOB, UNSCOPED, AppWorld, drafts, make_world

pytestmark = pytest.mark.anyio

AT = datetime(2026, 12, 1, 14, 5, 59, tzinfo=UTC)


@pytest.mark.parametrize(
    ("name", "version", "title"),
    [
        ("claude-code", "2.1", "claude-code 2.1 — 2026-12-01 14:05"),
        ("  my\tagent ", "", "my agent — 2026-12-01 14:05"),
        ("", "", "MCP agent — 2026-12-01 14:05"),
        ("x" * 200, "9", "x" * 120 + " — 2026-12-01 14:05"),
    ],
)
def test_the_task_title_is_the_clients_name_version_and_the_minute(
    name: str, version: str, title: str
) -> None:
    assert agent_task_title(name, version, AT) == title


def _agents(world: AppWorld, workspace_id: str = "") -> AgentSessions:
    services = world.services
    return AgentSessions(
        host=services.host,
        lifecycle=services.lifecycle,
        asking=services.asking,
        clock=world.clock,
        workspace_id=workspace_id,
    )


async def _open(
    agents: AgentSessions, identity: Identity, questions: tuple[QuestionDraft, ...] = drafts()
) -> str:
    return await agents.open(
        identity, client_name="claude-code", client_version="2.1", drafts=questions, context=""
    )


async def test_each_caller_gets_one_agents_workspace_of_its_own_created_on_first_use() -> None:
    world = make_world()
    agents = _agents(world)
    first, second = await _open(agents, ALICE), await _open(agents, ALICE)
    other = await _open(agents, BOB)
    unscoped = await _open(agents, UNSCOPED)
    workspaces = {w.id: w for w in world.host.list_workspaces()}
    assert sorted((w.name, w.owner_id) for w in workspaces.values()) == [
        ("Agents", ""),
        ("Agents", "alice"),
        ("Agents", "bob"),
    ]

    def workspace_of(session_id: str) -> str:
        session = world.host.get_session(session_id)
        assert session is not None
        assert session.is_primary
        task = world.host.get_task(session.task_id)
        assert task is not None
        assert task.title == "claude-code 2.1 — " + f"{world.clock.now():%Y-%m-%d %H:%M}"
        return workspaces[task.workspace_id].owner_id

    assert [workspace_of(s) for s in (first, second, other, unscoped)] == [
        "alice",
        "alice",
        "bob",
        "",
    ]
    assert len({first, second, other, unscoped}) == 4


async def test_a_configured_workspace_is_used_and_one_the_caller_cannot_see_is_not_found() -> None:
    world = make_world()
    shared = world.workspace("alice")
    agents = _agents(world, shared.id)
    session = world.host.get_session(await _open(agents, ALICE))
    assert session is not None
    task = world.host.get_task(session.task_id)
    assert task is not None
    assert task.workspace_id == shared.id
    with pytest.raises(NotFound):
        await _open(agents, BOB)
    assert len(world.host.list_tasks()) == 1


async def test_an_ask_that_would_be_refused_creates_nothing() -> None:
    world = make_world()
    agents = _agents(world)
    with pytest.raises(InvalidQuestions):
        await _open(agents, ALICE, ())
    world.services.asking.limits = attrs.evolve(
        world.services.asking.limits, max_active_bundles_per_identity=1
    )
    session_id = await _open(agents, ALICE)
    await world.services.asking.create(ALICE, session_id, drafts(), "")
    with pytest.raises(LimitExceeded):
        await _open(agents, ALICE, drafts(prefix="Other"))
    assert len(world.host.list_tasks()) == 1


async def test_with_auth_disabled_the_limits_apply_per_agent_session_not_server_wide() -> None:
    """#29 S9: with auth disabled every agent is the one synthetic identity; one agent's open
    asks must not get every other agent a 429, so the unscoped identity's limits count the
    session's own bundles. A scoped identity still counts everything it asked."""
    world = make_world()
    world.services.asking.limits = attrs.evolve(
        world.services.asking.limits,
        max_active_bundles_per_identity=2,
        max_active_bundles_per_session=10,
    )
    agents = _agents(world)
    busy = world.session().id
    for n in range(2):
        await world.services.asking.create(UNSCOPED, busy, drafts(prefix=f"Q{n}"), "")
    with pytest.raises(LimitExceeded) as refused:
        await world.services.asking.create(UNSCOPED, busy, drafts(prefix="Q2"), "")
    assert refused.value.limit == "CLARION_MAX_ACTIVE_BUNDLES_PER_IDENTITY"
    # Another agent session (a host's, or one /mcp/agent opens) still has its own room.
    await world.services.asking.create(UNSCOPED, world.session().id, drafts(), "")
    other = await _open(agents, UNSCOPED)
    await world.services.asking.create(UNSCOPED, other, drafts(), "")
    # A scoped identity counts only what it asked, in every session: Alice has two.
    await world.services.asking.create(ALICE, world.session().id, drafts(), "")
    await world.services.asking.create(ALICE, world.session().id, drafts(), "")
    with pytest.raises(LimitExceeded):
        await world.services.asking.create(ALICE, world.session().id, drafts(), "")
    with pytest.raises(LimitExceeded):
        await _open(agents, ALICE)


async def test_ending_the_session_completes_its_turn_and_detaches_its_bundles() -> None:
    world = make_world()
    agents = _agents(world)
    session_id = await _open(agents, ALICE)
    pending_id = await world.services.asking.create(ALICE, session_id, drafts(), "")
    assert await agents.end(ALICE, session_id) == 1
    turn = world.host.current_turn(session_id)
    assert turn is not None
    assert turn.completed_at is not None
    assert world.statuses(pending_id) == ["pending"]
    assert await agents.end(ALICE, session_id) == 0
