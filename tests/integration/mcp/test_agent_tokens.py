"""Agent tokens are bounded (issue 14): an agent token works only while its session is not in
a terminal state and the workspace owner it acts as is active; with it, ``list_tasks`` shows
that session's task only; it is never a REST credential."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from clarion.domain.model import SessionState
from tests.integration.mcp.harness import (
    LIST_TASKS,
    Agent,
    McpWorld,
    Person,
    http_client,
    mcp_client,
    serving,
    structured,
)

pytestmark = pytest.mark.anyio

REFUSED = (401, {"error": "authentication required"})


@pytest.fixture(name="world")
async def fixture_world(database_url: str) -> AsyncIterator[McpWorld]:
    """As the package's world, on SQLite and on PostgreSQL."""
    async with serving(McpWorld.build(database_url, progress_interval=0.05)) as world:
        yield world


async def _session_post(world: McpWorld, agent: Agent) -> tuple[int, object]:
    """One MCP request on the agent's in-session endpoint with its token."""
    async with http_client(agent.token) as http:
        response = await http.post(
            world.session_url(agent.session.id),
            json={},
            headers={"Accept": "application/json, text/event-stream"},
        )
    return response.status_code, response.json() if response.status_code == 401 else None


async def _lists_its_task(world: McpWorld, agent: Agent, mode: str = "auto") -> bool:
    async with mcp_client(world.session_url(agent.session.id), token=agent.token, mode=mode) as c:
        listed = structured(await c.call_tool(LIST_TASKS, {}))
    return [task["id"] for task in listed["tasks"]] == [agent.task.id]


@pytest.mark.parametrize("state", sorted(SessionState.TERMINAL))
async def test_an_agent_token_is_refused_once_its_session_reaches_a_terminal_state(
    world: McpWorld, alice: Person, state: str
) -> None:
    agent = await world.agent(alice)
    sibling = await world.agent(alice)
    assert await _lists_its_task(world, agent)
    await world.services.lifecycle.set_session_state(alice.identity, agent.session.id, state)
    assert await _session_post(world, agent) == REFUSED
    assert await _lists_its_task(world, sibling)  # other sessions' tokens are unaffected


async def test_an_agent_token_keeps_working_in_every_non_terminal_state(
    world: McpWorld, alice: Person
) -> None:
    agent = await world.agent(alice)
    for state in sorted(set(SessionState.ALL) - SessionState.TERMINAL):
        await world.services.lifecycle.set_session_state(alice.identity, agent.session.id, state)
        assert await _lists_its_task(world, agent), state


async def test_an_agent_token_is_refused_once_its_owner_is_deactivated(
    world: McpWorld, alice: Person, bob: Person, mode: str
) -> None:
    """The agent acts as its workspace's owner; a deactivated owner's agents stop at once,
    an agent in another owner's workspace does not."""
    agent = await world.agent(alice)
    others = await world.agent(bob)
    assert await _lists_its_task(world, agent, mode)
    assert alice.identity.user_id is not None
    assert world.authentication.deactivate_user(alice.identity.user_id)
    assert await _session_post(world, agent) == REFUSED
    assert await _lists_its_task(world, others, mode)
    async with http_client(alice.token) as http:
        response = await http.get(f"{world.base_url}/api/v1/tasks")
    assert response.status_code == 401  # and so is the owner's own token


async def test_list_tasks_with_an_agent_token_shows_only_its_sessions_task(
    world: McpWorld, alice: Person, mode: str
) -> None:
    workspace = await world.workspace(alice)
    agent = await world.agent(alice, workspace)
    same_workspace = await world.agent(alice, workspace)
    elsewhere = await world.agent(alice)
    await world.bundle(alice, agent)
    async with mcp_client(world.session_url(agent.session.id), token=agent.token, mode=mode) as c:
        mine = structured(await c.call_tool(LIST_TASKS, {}))
        in_workspace = structured(await c.call_tool(LIST_TASKS, {"workspace_id": workspace.id}))
        other_workspace = structured(
            await c.call_tool(LIST_TASKS, {"workspace_id": elsewhere.task.workspace_id})
        )
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as c:
        as_owner = structured(await c.call_tool(LIST_TASKS, {}))
    assert {task["id"] for task in as_owner["tasks"]} == {
        agent.task.id,
        same_workspace.task.id,
        elsewhere.task.id,
    }
    assert mine["total"] == 1
    assert [(t["id"], t["task_pending_action"]) for t in mine["tasks"]] == [
        (agent.task.id, "clarification")
    ]
    assert in_workspace == mine
    assert other_workspace == {"tasks": [], "total": 0}


async def test_an_agent_token_is_not_a_rest_credential(world: McpWorld, alice: Person) -> None:
    """REST takes personal access tokens and browser sessions only: an agent token lists
    nothing there (``GET /api/v1/tasks`` and the pending list are 401)."""
    agent = await world.agent(alice)
    async with http_client(agent.token) as http:
        tasks = await http.get(f"{world.base_url}/api/v1/tasks")
        pending = await http.get(f"{world.base_url}/api/v1/clarification/pending")
    assert (tasks.status_code, tasks.json()) == REFUSED
    assert (pending.status_code, pending.json()) == REFUSED
