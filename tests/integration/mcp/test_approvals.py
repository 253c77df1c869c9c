"""The approval tools (issue #33): ``request_approval_kandev`` on the agent endpoints blocks
like the ask tool until people decide; ``decide_approval_kandev`` on ``/mcp`` and
``/mcp/agent`` is one person's vote (quorum, veto, once per person); the generic
``answer_question_kandev`` on an approval is a vote too. Errors use the one table."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitRequestFormParams, ElicitRequestParams, ElicitResult

from tests.integration.mcp.harness import (
    ANSWER,
    Agent,
    McpWorld,
    Person,
    http_client,
    mcp_client,
    structured,
    tool_error,
    watching,
)

pytestmark = pytest.mark.anyio

REQUEST = "request_approval_kandev"
DECIDE = "decide_approval_kandev"
ACTION = {"name": "shell", "arguments": {"command": "rm -rf build/", "cwd": "/srv"}}


async def _shared_agent(world: McpWorld, owner: Person) -> Agent:
    """An agent in an unowned workspace, which every signed-in person sees (so may vote)."""
    shared = world.host_repository.create_workspace("shared", "")
    return await world.agent(owner, shared)


async def test_the_tools_are_listed_where_the_brief_puts_them(
    world: McpWorld, alice: Person
) -> None:
    agent = await world.agent(alice)
    async with mcp_client(world.external_url, token=alice.token) as external:
        on_external = [tool.name for tool in (await external.list_tools()).tools]
    async with mcp_client(world.session_url(agent.session.id), token=agent.token) as session:
        on_session = [tool.name for tool in (await session.list_tools()).tools]
    async with mcp_client(world.agent_url, token=alice.token) as agent_surface:
        on_agent = [tool.name for tool in (await agent_surface.list_tools()).tools]
    assert DECIDE in on_external
    assert REQUEST not in on_external
    assert REQUEST in on_session
    assert DECIDE not in on_session
    assert {REQUEST, DECIDE} <= set(on_agent)


async def test_two_approvals_decide_and_the_blocked_agent_gets_the_view(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """Quorum (2): the first vote is counted and leaves the request pending; the second
    decides; the waiting agent gets ``approved`` with both votes; a late vote is told."""
    bob, carol = world.person("bob"), world.person("carol")
    agent = await _shared_agent(world, alice)
    result: dict[str, Any] = {}

    async def request() -> None:
        url = world.session_url(agent.session.id)
        async with mcp_client(url, token=agent.token, mode=mode) as client:
            arguments = {"action": ACTION, "reason": "clean build", "required_approvals": 2}
            result.update(structured(await client.call_tool(REQUEST, arguments)))

    async with watching(world) as events, anyio.create_task_group() as tasks:
        tasks.start_soon(request)
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
        async with mcp_client(world.external_url, token=bob.token) as external:
            first = structured(
                await external.call_tool(
                    DECIDE, {"pending_id": created.pending_id, "decision": "approve"}
                )
            )
            repeat = structured(
                await external.call_tool(
                    DECIDE, {"pending_id": created.pending_id, "decision": "deny"}
                )
            )
        assert first["counted"] is True
        assert first["approval"]["status"] == "pending"
        assert repeat["counted"] is False  # a repeat changes nothing, not even into a deny
        assert repeat["approval"]["status"] == "pending"
        async with mcp_client(world.agent_url, token=carol.token) as agent_surface:
            second = structured(
                await agent_surface.call_tool(
                    DECIDE,
                    {"pending_id": created.pending_id, "decision": "approve", "comment": "ok"},
                )
            )
        assert second["counted"] is True
        assert second["approval"]["status"] == "approved"

    assert result["status"] == "approved"
    assert result["pending_id"] == created.pending_id
    assert result["action"] == ACTION
    assert result["action_digest"].startswith("sha256:")
    assert [vote["display_name"] for vote in result["votes"]] == ["bob", "carol"]
    assert result["comment"] == "ok"
    assert result["decided_by"]["display_name"] == "carol"
    async with mcp_client(world.external_url, token=alice.token) as external:
        late = structured(
            await external.call_tool(DECIDE, {"pending_id": created.pending_id, "decision": "deny"})
        )
    assert late["counted"] is False
    assert late["approval"]["status"] == "approved"


async def test_a_deny_over_the_generic_answer_tool_vetoes_and_a_vote_short_of_quorum_says_so(
    world: McpWorld, alice: Person
) -> None:
    """``answer_question_kandev`` on an approval is a vote: short of the quorum it is the
    ``VOTE_RECORDED`` tool error with the tally; a deny decides at once."""
    bob = world.person("bob")
    agent = await _shared_agent(world, alice)
    result: dict[str, Any] = {}

    async def request() -> None:
        url = world.session_url(agent.session.id)
        async with mcp_client(url, token=agent.token) as client:
            arguments = {"action": ACTION, "required_approvals": 2}
            result.update(structured(await client.call_tool(REQUEST, arguments)))

    def vote(option: str, text: str = "") -> dict[str, Any]:
        answers = [{"question_id": "decision", "selected_options": [option], "custom_text": text}]
        return {"pending_id": created.pending_id, "answers": answers}

    async with watching(world) as events, anyio.create_task_group() as tasks:
        tasks.start_soon(request)
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
        async with mcp_client(world.external_url, token=alice.token) as external:
            text, details = tool_error(await external.call_tool(ANSWER, vote("approve")))
        assert details["code"] == "VOTE_RECORDED"
        assert (details["approvals"], details["required"], details["counted"]) == (1, 2, True)
        assert "1 of 2" in text
        async with mcp_client(world.external_url, token=bob.token) as external:
            denied = structured(await external.call_tool(ANSWER, vote("deny", "not now")))
        assert denied["claimed"] is True

    assert result["status"] == "denied"
    assert result["comment"] == "not now"
    assert [vote["decision"] for vote in result["votes"]] == ["approve", "deny"]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "action"),
        ({"action": {"name": "x", "arguments": []}}, "action.arguments"),
        ({"action": {"name": "", "arguments": {}}}, "action.name"),
        ({"action": {"name": "x", "arguments": {}, "extra": 1}}, "action.extra"),
        ({"action": ACTION, "required_approvals": 0}, "required_approvals"),
        ({"action": ACTION, "required_approvals": True}, "required_approvals"),
        ({"action": ACTION, "candidates": {"users": "bob"}}, "candidates.users"),
        ({"action": ACTION, "colour": "red"}, "colour"),
    ],
)
async def test_bad_request_arguments_are_refused_naming_the_field(
    world: McpWorld, alice: Person, arguments: dict[str, Any], field: str
) -> None:
    agent = await world.agent(alice)
    async with mcp_client(world.session_url(agent.session.id), token=agent.token) as client:
        _, details = tool_error(await client.call_tool(REQUEST, arguments))
    assert details["code"] == "VALIDATION_ERROR"
    assert details["field"] == field


@pytest.mark.parametrize(
    ("arguments", "code", "field"),
    [
        ({"decision": "approve"}, "VALIDATION_ERROR", "pending_id"),
        ({"pending_id": "nope", "decision": "maybe"}, "VALIDATION_ERROR", "decision"),
        ({"pending_id": "nope", "decision": "approve"}, "NOT_FOUND", None),
    ],
)
async def test_bad_decisions_are_refused_with_the_one_error_table(
    world: McpWorld, alice: Person, arguments: dict[str, Any], code: str, field: str | None
) -> None:
    async with mcp_client(world.external_url, token=alice.token) as external:
        _, details = tool_error(await external.call_tool(DECIDE, arguments))
    assert details["code"] == code
    assert details.get("field") == field


async def test_waiting_again_on_another_action_is_not_found(world: McpWorld, alice: Person) -> None:
    """The rejoin's ``pending_id`` must be the request for this very action (its digest):
    another action cannot borrow a request's decision."""
    agent = await world.agent(alice)
    created: list[str] = []

    async def request() -> None:
        url = world.session_url(agent.session.id)
        async with mcp_client(url, token=agent.token) as client:
            await client.call_tool(REQUEST, {"action": ACTION})

    async with watching(world) as events, anyio.create_task_group() as tasks:
        tasks.start_soon(request)
        event = await events.wait_for("bundle.created", session_id=agent.session.id)
        created.append(event.pending_id)
        other = {"name": "shell", "arguments": {"command": "rm -rf /", "cwd": "/srv"}}
        async with mcp_client(world.agent_url, token=alice.token) as client:
            _, details = tool_error(
                await client.call_tool(REQUEST, {"action": other, "pending_id": created[0]})
            )
        assert details["code"] == "NOT_FOUND"
        async with mcp_client(world.external_url, token=alice.token) as external:
            await external.call_tool(DECIDE, {"pending_id": created[0], "decision": "approve"})


async def test_a_legacy_client_is_offered_the_approval_form_and_its_decision_is_the_outcome(
    world: McpWorld, alice: Person
) -> None:
    """Elicitation (2025-11-25) on ``/mcp/agent``: the client of the person whose token the
    agent uses gets the Approve/Deny form with the action in the message; their deny goes
    through the resolver and ends the wait. (In-session, the caller is the agent's own token,
    which never decides an approval: no form is offered there.)"""
    forms: list[ElicitRequestFormParams] = []

    async def decide_in_form(
        ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)
        forms.append(params)
        return ElicitResult(action="accept", content={"decision": "deny", "comment": "in form"})

    callback: Any = decide_in_form  # the SDK's ElicitationFnT protocol
    async with (
        http_client(alice.token) as http,
        Client(
            streamable_http_client(world.agent_url, http_client=http),
            mode="legacy",
            elicitation_callback=callback,
        ) as client,
    ):
        result = structured(await client.call_tool(REQUEST, {"action": ACTION, "reason": "why"}))
    assert result["status"] == "denied"
    assert result["comment"] == "in form"
    assert [vote["surface"] for vote in result["votes"]] == ["agent_client"]
    [form] = forms
    assert set(form.requested_schema["properties"]) == {"decision", "comment"}
    assert '"command": "rm -rf build/"' in form.message
