"""Issue #21: ``/mcp/agent`` — an agent that no host manages asks with one line of
configuration. Over real HTTP with the SDK client, in both protocol eras, on SQLite and
PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from clarion.adapters import disconnect
from clarion.domain.limits import Limits
from clarion.ports.events import Event
from tests.integration.mcp.harness import (
    ASK,
    LIST_TASKS,
    EventLog,
    McpWorld,
    Person,
    answers_for,
    drafts,
    http_client,
    mcp_client,
    question_args,
    serving,
    structured,
    tool_error,
    watching,
)

pytestmark = pytest.mark.anyio

CLAUDE = Implementation(name="claude-code", version="2.1")
NOT_FOUND_BODY = {"error": "clarification request not found"}
LEGACY = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "idle-agent", "version": "3"},
    },
}


@pytest.fixture(
    name="database_url",
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def fixture_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'clarion.db'}"
    make: Callable[[], str] = request.getfixturevalue("make_postgres_database")
    return make()


@pytest.fixture(name="world")
async def fixture_world(database_url: str) -> AsyncIterator[McpWorld]:
    """Auth enabled, a fast progress interval, served on a real socket."""
    async with serving(McpWorld.build(database_url, progress_interval=0.05)) as world:
        yield world


async def _respond(world: McpWorld, person: Person, pending_id: str) -> httpx2.Response:
    async with http_client(person.token) as http:
        return await http.post(
            world.respond_url(pending_id), json={"answers": answers_for(1, option=2)}
        )


async def _rest(world: McpWorld, person: Person, path: str) -> Any:
    async with http_client(person.token) as http:
        response = await http.get(f"{world.base_url}/api/v1{path}")
        assert response.status_code == 200, response.text
        return response.json()


async def _ask_and_answer(
    world: McpWorld, events: EventLog, person: Person, mode: str, client: Implementation
) -> tuple[Event, dict[str, Any]]:
    """One agent connects to ``/mcp/agent`` as ``person``, asks; the person answers over REST.
    Returns the bundle's creation event and what the agent's call returned."""
    result: dict[str, Any] = {}
    seen = len(events.events)

    async def ask() -> None:
        async with mcp_client(
            world.agent_url, token=person.token, mode=mode, client_info=client
        ) as agent:
            result.update(structured(await agent.call_tool(ASK, {"questions": question_args(1)})))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(ask)
        created = await _next_created(events, seen)
        answered = await _respond(world, person, created.pending_id)
        assert answered.status_code == 200, answered.text
    return created, result


async def _next_created(events: EventLog, seen: int) -> Event:
    """The first ``bundle.created`` event after the first ``seen`` events."""
    return await events.wait_for("bundle.created", since=seen)


async def test_an_agent_asks_with_only_a_token_and_receives_the_answer_from_rest(
    world: McpWorld, alice: Person, mode: str
) -> None:
    async with watching(world) as events:
        created, result = await _ask_and_answer(world, events, alice, mode, CLAUDE)
    assert result["q1"]["selected_options"] == ["q1_opt2"]
    assert result["rejected"] is False
    [task] = [
        t for t in (await _rest(world, alice, "/tasks"))["tasks"] if t["id"] == created.task_id
    ]
    assert task["title"].startswith("claude-code 2.1 — ")
    [workspace] = (await _rest(world, alice, "/workspaces"))["workspaces"]
    assert (workspace["name"], workspace["owner_id"]) == ("Agents", alice.identity.user_id)
    assert task["workspace_id"] == workspace["id"]


async def test_each_connection_gets_its_own_task_session_and_listing_shows_both(
    world: McpWorld, alice: Person, mode: str
) -> None:
    cursor = Implementation(name="cursor", version="1.0")
    async with watching(world) as events:
        first, _ = await _ask_and_answer(world, events, alice, mode, CLAUDE)
        second, _ = await _ask_and_answer(world, events, alice, mode, cursor)
    assert first.session_id != second.session_id
    assert first.task_id != second.task_id
    async with mcp_client(world.agent_url, token=alice.token, mode=mode) as agent:
        listed = structured(await agent.call_tool(LIST_TASKS, {}))
    titles = {task["id"]: task["title"] for task in listed["tasks"]}
    assert titles[first.task_id].startswith("claude-code 2.1 — ")
    assert titles[second.task_id].startswith("cursor 1.0 — ")


async def test_asks_in_one_mcp_session_share_its_task_session_and_sessionless_calls_do_not(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """2025-11-25: one Clarion session per MCP session. 2026-07-28 has no MCP session: one
    Clarion session per ask call."""
    created: list[Event] = []
    async with (
        watching(world) as events,
        mcp_client(world.agent_url, token=alice.token, mode=mode, client_info=CLAUDE) as agent,
    ):
        for _ in range(2):
            seen = len(events.events)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(agent.call_tool, ASK, {"questions": question_args(1)})
                created.append(await _next_created(events, seen))
                assert (await _respond(world, alice, created[-1].pending_id)).status_code == 200
    first, second = created
    assert (first.session_id == second.session_id) is (mode == "legacy")
    assert first.pending_id != second.pending_id


async def test_without_a_valid_personal_token_the_agent_endpoint_is_401(
    world: McpWorld, alice: Person
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    for token in ("", "clarion_pat_not-a-token"):
        async with http_client(token) as http:
            response = await http.post(world.agent_url, json=INITIALIZE, headers=headers)
        assert response.status_code == 401
        assert response.json() == {"error": "authentication required"}
        assert response.headers["www-authenticate"] == "Bearer"
    assert await _rest(world, alice, "/tasks") == {"tasks": [], "total": 0, "next_cursor": ""}


async def test_the_agents_question_is_the_callers_and_to_anyone_else_foreign_is_fabricated(
    world: McpWorld, alice: Person, bob: Person, mode: str
) -> None:
    result: dict[str, Any] = {}

    async def ask() -> None:
        async with mcp_client(world.agent_url, token=alice.token, mode=mode) as agent:
            result.update(structured(await agent.call_tool(ASK, {"questions": question_args(1)})))

    async with watching(world) as events, anyio.create_task_group() as tasks:
        tasks.start_soon(ask)
        created = await events.wait_for("bundle.created")
        pending = await _rest(world, alice, "/clarification/pending")
        assert [b["pending_id"] for b in pending["bundles"]] == [created.pending_id]
        assert [t["id"] for t in (await _rest(world, alice, "/tasks"))["tasks"]] == [
            created.task_id
        ]
        assert (await _rest(world, bob, "/clarification/pending"))["bundles"] == []
        assert (await _rest(world, bob, "/tasks"))["tasks"] == []
        async with mcp_client(world.agent_url, token=bob.token, mode=mode) as stranger:
            assert structured(await stranger.call_tool(LIST_TASKS, {}))["tasks"] == []
        foreign = await _respond(world, bob, created.pending_id)
        fabricated = await _respond(world, bob, "no-such-bundle")
        assert (foreign.status_code, foreign.json()) == (404, NOT_FOUND_BODY)
        assert (fabricated.status_code, fabricated.json()) == (404, NOT_FOUND_BODY)
        assert (await _respond(world, alice, created.pending_id)).status_code == 200
    assert result["q1"]["selected_options"] == ["q1_opt2"]


async def test_a_client_gone_mid_ask_leaves_an_answerable_bundle_whose_answer_resumes_once(
    world: McpWorld, alice: Person, mode: str
) -> None:
    async with watching(world) as events:
        async with anyio.create_task_group() as tasks:

            async def ask() -> None:
                async with mcp_client(world.agent_url, token=alice.token, mode=mode) as agent:
                    await agent.call_tool(ASK, {"questions": question_args(1)})

            tasks.start_soon(ask)
            created = await events.wait_for("bundle.created")
            tasks.cancel_scope.cancel()
        await events.wait_for("bundle.detached", pending_id=created.pending_id)
        pending = await _rest(world, alice, "/clarification/pending")
        assert [b["pending_id"] for b in pending["bundles"]] == [created.pending_id]
        answered = await _respond(world, alice, created.pending_id)
    assert answered.status_code == 200, answered.text
    assert answered.json()["claimed"] is True
    assert [(r.pending_id, r.session_id, r.task_id) for r in world.resumes] == [
        (created.pending_id, created.session_id, created.task_id)
    ]


async def test_a_legacy_call_learns_from_its_transport_that_its_client_left(
    world: McpWorld, alice: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#35: a parked 2025-11-25 call is not asked every second whether its client is still
    there: the SDK's event-stream response reads the ``http.disconnect`` and the route's
    signal ends the call at once. With the slow re-check put out of reach, the client
    leaving mid-ask still detaches the bundle (facts §4.9)."""
    monkeypatch.setattr(disconnect, "SIGNALLED_RECHECK_S", 3600.0)
    async with watching(world) as events:
        async with anyio.create_task_group() as tasks:

            async def ask() -> None:
                async with mcp_client(world.agent_url, token=alice.token, mode="legacy") as agent:
                    await agent.call_tool(ASK, {"questions": question_args(1)})

            tasks.start_soon(ask)
            created = await events.wait_for("bundle.created")
            tasks.cancel_scope.cancel()
        await events.wait_for("bundle.detached", pending_id=created.pending_id)


async def test_the_end_of_an_ask_call_without_an_mcp_session_completes_its_turn(
    world: McpWorld, alice: Person
) -> None:
    """2026-07-28: the Clarion session lives as long as the call."""
    async with watching(world) as events:
        created, _ = await _ask_and_answer(world, events, alice, "auto", CLAUDE)
    turn = world.host_repository.current_turn(created.session_id)
    assert turn is not None
    assert turn.completed_at is not None


async def test_the_end_of_a_legacy_mcp_session_completes_its_turn_and_its_bundles_detach(
    world: McpWorld, alice: Person
) -> None:
    """DELETE ends the MCP session: a bundle still pending in its Clarion session detaches,
    stays answerable, and its answer resumes the agent."""
    async with watching(world) as events:
        async with mcp_client(world.agent_url, token=alice.token, mode="legacy") as agent:
            seen = len(events.events)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(agent.call_tool, ASK, {"questions": question_args(1)})
                first = await _next_created(events, seen)
                assert (await _respond(world, alice, first.pending_id)).status_code == 200
            later = await world.services.asking.create(
                alice.identity, first.session_id, drafts(1, prefix="Later"), "context"
            )
            turn = world.host_repository.current_turn(first.session_id)
            assert turn is not None
            assert turn.completed_at is None
        await events.wait_for("bundle.detached", pending_id=later)
        assert (await _respond(world, alice, later)).status_code == 200
    turn = world.host_repository.current_turn(first.session_id)
    assert turn is not None
    assert turn.completed_at is not None
    assert [(r.pending_id, r.session_id) for r in world.resumes] == [(later, first.session_id)]
    assert world.mcp.agents.bound_sessions() == {}


async def _raw_legacy_agent_asks(world: McpWorld, person: Person, events: EventLog) -> Event:
    """Over raw HTTP (the SDK client keeps a stream open, which keeps a session busy): open
    a legacy MCP session on ``/mcp/agent``, ask, have ``person`` answer, and leave the MCP
    session open with no request in flight. Returns the bundle's creation event."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": LEGACY}
    async with http_client(person.token) as http:
        opened = await http.post(world.agent_url, json=INITIALIZE, headers=headers)
        assert opened.status_code == 200, opened.text
        session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
        ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(world.agent_url, json=ready, headers=session)).is_success
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": ASK, "arguments": {"questions": question_args(1)}},
        }
        asked: list[httpx2.Response] = []

        async def ask() -> None:
            asked.append(await http.post(world.agent_url, json=call, headers=session))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            created = await events.wait_for("bundle.created")
            assert (await _respond(world, person, created.pending_id)).status_code == 200
        assert "q1_opt2" in asked[0].text
    return created


async def test_an_idle_legacy_mcp_session_expires_and_completes_its_turn(
    database_url: str,
) -> None:
    """Idle expiry (``CLARION_MCP_SESSION_IDLE_S``) ends the MCP session like a DELETE.

    The second bundle is created right after the agent's last request, well inside the idle
    window: created after the session expired, nothing would detach it (under a loaded test
    run a 0.3 s window between the answer and the create was sometimes missed)."""
    world = McpWorld.build(database_url, limits=Limits(mcp_session_idle_s=1.5))
    async with serving(world), watching(world) as events:
        alice = world.person("alice")
        first = await _raw_legacy_agent_asks(world, alice, events)
        later = await world.services.asking.create(
            alice.identity, first.session_id, drafts(1, prefix="Later"), "context"
        )
        [task] = (await _rest(world, alice, "/tasks"))["tasks"]
        assert task["title"].startswith("idle-agent 3 — ")
        await events.wait_for("bundle.detached", pending_id=later)
    assert world.mcp.agents.bound_sessions() == {}


async def test_stopping_the_server_completes_the_turns_of_open_legacy_mcp_sessions(
    database_url: str,
) -> None:
    world = McpWorld.build(database_url)
    async with serving(world), watching(world) as events:
        alice = world.person("alice")
        first = await _raw_legacy_agent_asks(world, alice, events)
        assert world.mcp.agents.bound_sessions() != {}
    try:
        turn = world.host_repository.current_turn(first.session_id)
    finally:
        world.engine.dispose()  # serving disposed it already; this read opened it again
    assert turn is not None
    assert turn.completed_at is not None
    assert world.mcp.agents.bound_sessions() == {}


async def test_a_refused_ask_creates_no_task_the_identitys_bundle_limit_counts(
    database_url: str, mode: str
) -> None:
    """Auto-created sessions count against the per-identity limits: an ask over
    ``CLARION_MAX_ACTIVE_BUNDLES_PER_IDENTITY`` is refused before any task is created."""
    world = McpWorld.build(
        database_url, progress_interval=0.05, limits=Limits(max_active_bundles_per_identity=1)
    )
    async with serving(world), watching(world) as events:
        alice = world.person("alice")
        async with anyio.create_task_group() as tasks:

            async def ask() -> None:
                async with mcp_client(world.agent_url, token=alice.token, mode=mode) as agent:
                    await agent.call_tool(ASK, {"questions": question_args(1)})

            tasks.start_soon(ask)
            created = await events.wait_for("bundle.created")
            async with mcp_client(world.agent_url, token=alice.token, mode=mode) as second:
                refused = await second.call_tool(ASK, {"questions": question_args(2)})
            _, details = tool_error(refused)
            assert details["code"] == "LIMIT_EXCEEDED"
            assert details["limit"] == "CLARION_MAX_ACTIVE_BUNDLES_PER_IDENTITY"
            tasks_listed = (await _rest(world, alice, "/tasks"))["tasks"]
            assert [task["id"] for task in tasks_listed] == [created.task_id]
            assert (await _respond(world, alice, created.pending_id)).status_code == 200


async def test_legacy_agent_sessions_count_against_the_identitys_mcp_session_cap(
    database_url: str,
) -> None:
    world = McpWorld.build(database_url, limits=Limits(max_mcp_sessions=1))
    async with serving(world):
        alice = world.person("alice")
        async with (
            mcp_client(world.agent_url, token=alice.token, mode="legacy"),
            http_client(alice.token) as http,
        ):
            refused = await http.post(
                world.agent_url,
                json=INITIALIZE,
                headers={"Accept": "application/json, text/event-stream"},
            )
        assert refused.status_code == 429
        assert "CLARION_MAX_MCP_SESSIONS" in refused.json()["error"]


async def test_a_configured_workspace_takes_the_tasks_and_an_invisible_one_is_not_found(
    database_url: str, mode: str
) -> None:
    setup = McpWorld.build(database_url)
    alice, bob = setup.person("alice"), setup.person("bob")
    shared = await setup.workspace(alice, "Team")
    setup.engine.dispose()
    world = McpWorld.build(database_url, progress_interval=0.05, agent_workspace=shared.id)
    async with serving(world), watching(world) as events:
        created, _ = await _ask_and_answer(world, events, alice, mode, CLAUDE)
        [task] = (await _rest(world, alice, "/tasks"))["tasks"]
        assert (task["id"], task["workspace_id"]) == (created.task_id, shared.id)
        async with mcp_client(world.agent_url, token=bob.token, mode=mode) as stranger:
            refused = await stranger.call_tool(ASK, {"questions": question_args(1)})
        text, details = tool_error(refused)
        assert (text, details["code"]) == ("workspace not found", "NOT_FOUND")
        assert (await _rest(world, bob, "/tasks"))["tasks"] == []


async def test_with_auth_disabled_an_agent_needs_nothing_and_its_workspace_is_unowned(
    database_url: str, mode: str
) -> None:
    world = McpWorld.build(database_url, auth_enabled=False, progress_interval=0.05)
    async with serving(world), watching(world) as events:
        anyone = Person(identity=world.person("x").identity, token="")
        created, result = await _ask_and_answer(world, events, anyone, mode, CLAUDE)
        assert result["q1"]["selected_options"] == ["q1_opt2"]
        [workspace] = (await _rest(world, anyone, "/workspaces"))["workspaces"]
        assert (workspace["name"], workspace["owner_id"]) == ("Agents", "")
        [task] = (await _rest(world, anyone, "/tasks"))["tasks"]
        assert (task["id"], task["workspace_id"]) == (created.task_id, workspace["id"])


async def test_a_sessionless_request_naming_an_mcp_session_does_not_join_its_clarion_session(
    world: McpWorld, alice: Person
) -> None:
    """``Mcp-Session-Id`` counts only when the SDK routed the request through that session: a
    2026-07-28 request carrying another session's id gets a session of its own."""
    async with (
        watching(world) as events,
        mcp_client(world.agent_url, token=alice.token, mode="legacy") as legacy,
    ):
        seen = len(events.events)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(legacy.call_tool, ASK, {"questions": question_args(1)})
            first = await _next_created(events, seen)
            assert (await _respond(world, alice, first.pending_id)).status_code == 200
        [(mcp_id, bound)] = world.mcp.agents.bound_sessions().items()
        assert bound == first.session_id
        headers = {"Authorization": f"Bearer {alice.token}", "Mcp-Session-Id": mcp_id}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
            Client(streamable_http_client(world.agent_url, http_client=http), mode="auto") as c,
        ):
            assert c.protocol_version == "2026-07-28"
            seen = len(events.events)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(c.call_tool, ASK, {"questions": question_args(1)})
                second = await _next_created(events, seen)
                assert (await _respond(world, alice, second.pending_id)).status_code == 200
    assert second.session_id != first.session_id


async def test_legacy_clients_served_without_sessions_get_a_session_per_ask(
    database_url: str,
) -> None:
    world = McpWorld.build(database_url, progress_interval=0.05, legacy_sessions=False)
    async with (
        serving(world),
        watching(world) as events,
    ):
        alice = world.person("alice")
        created: list[Event] = []
        async with mcp_client(world.agent_url, token=alice.token, mode="legacy") as agent:
            for _ in range(2):
                seen = len(events.events)
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(agent.call_tool, ASK, {"questions": question_args(1)})
                    created.append(await _next_created(events, seen))
                    answered = await _respond(world, alice, created[-1].pending_id)
                    assert answered.status_code == 200
        assert created[0].session_id != created[1].session_id
        assert world.mcp.agents.bound_sessions() == {}


async def test_concurrent_first_asks_in_one_mcp_session_share_one_task_session(
    world: McpWorld, alice: Person
) -> None:
    async with (
        watching(world) as events,
        mcp_client(world.agent_url, token=alice.token, mode="legacy") as agent,
        anyio.create_task_group() as tasks,
    ):
        for prefix in ("One", "Two"):
            args = {"questions": question_args(1, prefix=prefix)}
            tasks.start_soon(agent.call_tool, ASK, args)
        first = await events.wait_for("bundle.created")
        created = [
            first,
            await events.wait_for("bundle.created", since=events.events.index(first) + 1),
        ]
        assert created[0].session_id == created[1].session_id
        for event in created:
            assert (await _respond(world, alice, event.pending_id)).status_code == 200
    assert len((await _rest(world, alice, "/tasks"))["tasks"]) == 1
