"""Which tools each surface registers (S1–S3), who may call them, and the generated catalog."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from starlette.types import Receive, Scope, Send

from clarion.adapters.mcp import ToolNames, build_mcp
from clarion.adapters.mcp.catalog import HAND_WRITTEN, render_catalog, update_catalog
from clarion.adapters.mcp.errors import INTERNAL_MESSAGE
from clarion.adapters.mcp.schemas import agent_tools, external_tools, session_tools
from clarion.adapters.mcp.server import AuthGate, Caller
from clarion.app.usecases.auth import Authentication
from clarion.domain.model import Identity
from tests.integration.mcp.harness import (
    ASK,
    LIST_TASKS,
    McpWorld,
    Person,
    http_client,
    mcp_client,
    serving,
    structured,
    tool_error,
)

pytestmark = pytest.mark.anyio

# Issue #33 adds the approval tools after the pinned ones: deciding on /mcp and /mcp/agent,
# requesting on both agent endpoints.
EXTERNAL_TOOLS = [
    "list_pending_questions_kandev",
    "answer_question_kandev",
    "list_tasks_kandev",
    "decide_approval_kandev",
]
SESSION_TOOLS = ["ask_user_question_kandev", "list_tasks_kandev", "request_approval_kandev"]
AGENT_TOOLS = [*SESSION_TOOLS, "decide_approval_kandev"]
CATALOG = Path(__file__).resolve().parents[3] / "docs" / "mcp-tools.md"


async def test_each_surface_lists_exactly_its_pinned_tools_as_documented(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """S1–S3: the ask tool never on ``/mcp``; the question tools never in-session, nor on
    ``/mcp/agent``, which serves the in-session tools and ``decide_approval`` (issue #33).
    The tools served are exactly the definitions the catalog is generated from."""
    agent = await world.agent(alice)
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as external:
        listed_external = (await external.list_tools()).tools
    url = world.session_url(agent.session.id)
    async with mcp_client(url, token=agent.token, mode=mode) as in_session:
        listed_session = (await in_session.list_tools()).tools
    async with mcp_client(world.agent_url, token=alice.token, mode=mode) as agent_surface:
        listed_agent = (await agent_surface.list_tools()).tools
    assert [tool.name for tool in listed_external] == EXTERNAL_TOOLS
    assert [tool.name for tool in listed_session] == SESSION_TOOLS
    assert [tool.name for tool in listed_agent] == AGENT_TOOLS
    names = ToolNames()
    assert [t.model_dump() for t in listed_external] == [
        t.model_dump() for t in external_tools(names)
    ]
    assert [t.model_dump() for t in listed_session] == [
        t.model_dump() for t in session_tools(names)
    ]
    assert [t.model_dump() for t in listed_agent] == [t.model_dump() for t in agent_tools(names)]


def test_docs_mcp_tools_md_is_the_catalog_generated_from_the_registered_tools() -> None:
    """Regenerate with ``python -m clarion.adapters.mcp.catalog --update docs/mcp-tools.md``,
    which keeps the hand-written part after the generated one."""
    text = CATALOG.read_text(encoding="utf-8")
    generated, marker, _ = text.partition(HAND_WRITTEN)
    assert marker, "the hand-written part of docs/mcp-tools.md is missing"
    assert generated == render_catalog() + "\n"
    assert update_catalog(text) == text


async def test_tool_names_take_the_configured_suffix(world: McpWorld) -> None:
    surfaces = build_mcp(
        world.services, auth_enabled=False, authentication=None, tool_suffix="_acme"
    )
    async with (
        Client(surfaces.external) as external,
        Client(surfaces.session) as in_session,
        Client(surfaces.agent) as agent,
    ):
        external_names = [tool.name for tool in (await external.list_tools()).tools]
        session_names = [tool.name for tool in (await in_session.list_tools()).tools]
        agent_names = [tool.name for tool in (await agent.list_tools()).tools]
    assert external_names == [name.replace("_kandev", "_acme") for name in EXTERNAL_TOOLS]
    assert session_names == [name.replace("_kandev", "_acme") for name in SESSION_TOOLS]
    assert agent_names == [name.replace("_kandev", "_acme") for name in AGENT_TOOLS]
    assert "list_pending_questions_acme" in render_catalog(ToolNames("_acme"))


async def _post_status(url: str, token: str = "", host: str = "") -> tuple[int, object, str]:
    headers = {"Accept": "application/json, text/event-stream"}
    if host:
        headers["Host"] = host
    async with http_client(token) as http:
        response = await http.post(url, json={}, headers=headers)
    challenge = response.headers.get("www-authenticate", "")
    body = response.json() if response.status_code == 401 else None
    return response.status_code, body, challenge


async def test_surfaces_refuse_missing_and_wrong_credentials_with_401(
    world: McpWorld, alice: Person
) -> None:
    """interfaces.md: ``/mcp`` and ``/mcp/agent`` need a personal access token;
    ``/mcp/session/{id}`` needs that session's agent token. Anything else: 401 with
    ``WWW-Authenticate: Bearer``."""
    agent = await world.agent(alice)
    other = await world.agent(alice)
    session_url = world.session_url(agent.session.id)
    refused = [
        (world.external_url, ""),
        (world.external_url, "clarion_pat_00000000_" + "x" * 43),
        (world.external_url, agent.token),
        (session_url, ""),
        (session_url, alice.token),
        (session_url, other.token),
        (world.session_url("no-such-session"), agent.token),
        (world.agent_url, ""),
        (world.agent_url, agent.token),
    ]
    for url, token in refused:
        status, body, challenge = await _post_status(url, token)
        assert (status, body, challenge) == (
            401,
            {"error": "authentication required"},
            "Bearer",
        ), (url, token)


async def test_a_host_header_outside_the_allowed_names_is_refused(
    world: McpWorld, alice: Person
) -> None:
    """The DNS-rebinding check (``HttpGuard``) is on by default: loopback names only."""
    status, _, _ = await _post_status(world.external_url, alice.token, host="evil.example:80")
    assert status == 421


async def test_with_auth_disabled_both_surfaces_serve_callers_without_credentials(
    sqlite_url: str, mode: str
) -> None:
    """A4: every caller is the synthetic, unscoped identity."""
    async with serving(McpWorld.build(sqlite_url, auth_enabled=False)) as world:
        owner = world.person("owner")
        agent = await world.agent(owner)
        async with mcp_client(world.external_url, mode=mode) as external:
            tasks = structured(await external.call_tool(LIST_TASKS, {}))
        assert [task["id"] for task in tasks["tasks"]] == [agent.task.id]
        url = world.session_url(agent.session.id)
        async with mcp_client(url, mode=mode) as in_session:
            names = [tool.name for tool in (await in_session.list_tools()).tools]
        assert ASK in names


async def test_legacy_clients_are_served_without_sessions_when_configured(
    sqlite_url: str,
) -> None:
    """``legacy_sessions=False``: 2025-11-25 clients work statelessly (no ``Mcp-Session-Id``)."""
    async with serving(McpWorld.build(sqlite_url, legacy_sessions=False)) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        await world.bundle(alice, agent)
        async with mcp_client(world.external_url, token=alice.token, mode="legacy") as client:
            page = structured(await client.call_tool("list_pending_questions_kandev", {}))
    assert page["count"] == 1


async def test_a_call_that_bypasses_the_http_gate_is_refused_not_run_as_anyone(
    world: McpWorld,
) -> None:
    """An in-process client carries no HTTP request, hence no authenticated caller."""
    surfaces = build_mcp(world.services, auth_enabled=False, authentication=None)
    async with Client(surfaces.external) as client:
        result = await client.call_tool("list_tasks_kandev", {})
    text, details = tool_error(result)
    assert (text, details) == ("authentication required", {"code": "UNAUTHORIZED"})


@pytest.mark.parametrize(
    "options",
    [
        {"auth_enabled": True},
        {"auth_enabled": False, "session_path": "/mcp/session"},
        {"auth_enabled": False, "progress_interval": 20.0},
        {"auth_enabled": False, "progress_interval": 0.0},
    ],
    ids=["auth-without-authentication", "unbound-session-path", "slow-progress", "no-progress"],
)
async def test_build_mcp_refuses_settings_that_would_break_a_surface_contract(
    world: McpWorld, options: dict[str, Any]
) -> None:
    """Progress must come at least every 15 s (interfaces.md); the session endpoint must be
    bound to a session; enabled auth needs something to check tokens with."""
    with pytest.raises(ValueError, match=r"."):
        build_mcp(world.services, authentication=None, **options)


async def test_a_failure_while_checking_credentials_is_a_500_that_leaks_nothing() -> None:
    async def unreachable(scope: Scope) -> Caller | None:
        raise RuntimeError("could not connect to server at 10.0.0.5 as clarion:hunter2")

    async def never(scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("the MCP transport must not be reached")

    gate = AuthGate(never, unreachable)
    transport = httpx2.ASGITransport(app=gate)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        response = await http.post("/mcp", json={})
    assert response.status_code == 500
    assert response.json() == {"error": INTERNAL_MESSAGE}


async def test_building_the_surfaces_leaves_global_logging_alone(world: McpWorld) -> None:
    """The low-level SDK server is used because ``MCPServer()`` calls ``logging.basicConfig``
    (stack notes §1.1); a library must never install a root handler behind its host's back."""
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    root.handlers.clear()  # basicConfig only acts on a root logger without handlers
    try:
        surfaces = build_mcp(world.services, auth_enabled=False, authentication=None)
        async with Client(surfaces.session) as client:
            await client.list_tools()
        assert (root.handlers, root.level) == ([], level)
    finally:
        root.handlers[:] = saved


class _CountingAuthentication(Authentication):
    """The real authentication, counting the personal access tokens it resolves."""

    resolved = 0

    def resolve_bearer(self, token: str) -> Identity | None:
        self.resolved += 1
        return super().resolve_bearer(token)


async def test_an_external_mcp_request_is_authenticated_once(sqlite_url: str) -> None:
    """Served behind the REST middleware, an MCP request resolves its token once (in the MCP
    gate), and a request for a path that needs no identity resolves none."""
    world = McpWorld.build(sqlite_url, authentication_class=_CountingAuthentication)
    counting = world.authentication
    assert isinstance(counting, _CountingAuthentication)
    async with serving(world):
        token = world.person("alice").token
        async with mcp_client(world.external_url, token=token) as client:
            before = counting.resolved
            await client.list_tools()
            assert counting.resolved == before + 1
        async with http_client(token) as http:
            before = counting.resolved
            health = await http.get(f"{world.base_url}/healthz")
            assert health.status_code == 200
            assert counting.resolved == before
