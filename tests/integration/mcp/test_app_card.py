"""Issue #31 item 4: the MCP App card (``io.modelcontextprotocol/ui``, SEP-1865) on both agent
surfaces, over real HTTP with the SDK client in both protocol eras.

A client that negotiated MCP Apps sees the ask tool carry the ``ui://`` card, two app-only
tools and the card resource; the card's answer goes through the one resolver (exactly once,
N4 replay for a second answer) and is recorded as ``mcp_app``; a bundle the caller may not see
is NOT_FOUND exactly like a made-up id (A3). A client without the extension sees the pinned
listing byte for byte, no resources, no result ``_meta``, and the app-only tools do not exist.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from clarion.adapters.mcp.app_card import (
    ANSWER_TOOL,
    PENDING_META_KEY,
    RESOURCE_URI,
    STATUS_TOOL,
    card_html,
)
from clarion.adapters.mcp.schemas import ToolNames, agent_tools, session_tools
from clarion.domain.model import Identity
from clarion.domain.resolved_by import IdentityKind, Surface
from tests.integration.mcp.harness import (
    ASK,
    PROTOCOL_OF_MODE,
    McpWorld,
    Person,
    answers_for,
    http_client,
    mcp_client,
    question_args,
    structured,
    tool_error,
)

pytestmark = pytest.mark.anyio

NOT_FOUND = "clarification request not found"
APPS = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})


@contextlib.asynccontextmanager
async def apps_client(url: str, *, token: str, mode: str) -> AsyncIterator[Client]:
    """A host that renders MCP Apps: it declares the extension with the card's MIME type."""
    async with (
        http_client(token) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, extensions=[APPS]) as c,
    ):
        assert c.protocol_version == PROTOCOL_OF_MODE[mode]
        yield c


def _dumped(tools: Any) -> list[dict[str, Any]]:
    return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools]


PINNED = {
    "session": _dumped(session_tools(ToolNames())),
    "agent": _dumped(agent_tools(ToolNames())),  # with decide_approval (issue #33)
}


async def _endpoint(world: McpWorld, person: Person, surface: str) -> tuple[str, str]:
    """The URL and token an agent uses on ``surface``: its session's, or the person's PAT."""
    if surface == "agent":
        return world.agent_url, person.token
    agent = await world.agent(person)
    return world.session_url(agent.session.id), agent.token


@pytest.fixture(name="surface", params=["session", "agent"])
def fixture_surface(request: pytest.FixtureRequest) -> str:
    value = request.param
    assert isinstance(value, str)
    return value


# -- what each kind of client sees ---------------------------------------------------------------


async def test_a_client_without_apps_sees_exactly_the_pinned_catalog(
    world: McpWorld, alice: Person, mode: str, surface: str
) -> None:
    url, token = await _endpoint(world, alice, surface)
    async with mcp_client(url, token=token, mode=mode) as client:
        listed = await client.list_tools()
        assert _dumped(listed.tools) == PINNED[surface]  # no _meta anywhere, no app-only tools
        assert (await client.list_resources()).resources == []
        with pytest.raises(MCPError, match=f"unknown tool: {STATUS_TOOL}"):
            await client.call_tool(STATUS_TOOL, {"pending_id": "x"})
        with pytest.raises(MCPError, match=f"unknown tool: {ANSWER_TOOL}"):
            await client.call_tool(ANSWER_TOOL, {"pending_id": "x", "answers": answers_for()})


async def test_a_client_with_apps_sees_the_card_on_the_ask_tool_and_the_app_only_tools(
    world: McpWorld, alice: Person, mode: str, surface: str
) -> None:
    url, token = await _endpoint(world, alice, surface)
    async with apps_client(url, token=token, mode=mode) as client:
        # Advertised where the protocol has the field: the SDK's 2025-11-25 initialize result
        # carries no ``extensions`` (a 2026-07-28 field), whatever the server declares.
        advertised = client.server_capabilities.extensions or {}
        assert (EXTENSION_ID in advertised) is (mode == "auto")
        listed = {tool["name"]: tool for tool in _dumped((await client.list_tools()).tools)}
    ask = listed.pop(ASK)
    assert ask.pop("_meta") == {"ui": {"resourceUri": RESOURCE_URI}}
    pinned = PINNED[surface]
    assert ask == pinned[0]  # everything else about the ask tool is the pinned tool
    for other in pinned[1:]:  # list_tasks and the approval tools (issue #33): as pinned
        assert listed.pop(other["name"]) == other
    assert sorted(listed) == [ANSWER_TOOL, STATUS_TOOL]
    for tool in listed.values():
        assert tool["_meta"] == {"ui": {"resourceUri": RESOURCE_URI, "visibility": ["app"]}}
    assert listed[ANSWER_TOOL]["inputSchema"]["required"] == ["pending_id"]


async def test_the_card_is_one_self_contained_html_document(
    world: McpWorld, alice: Person, mode: str
) -> None:
    async with apps_client(world.agent_url, token=alice.token, mode=mode) as client:
        [resource] = (await client.list_resources()).resources
        read = await client.read_resource(RESOURCE_URI)
    assert (str(resource.uri), resource.mime_type) == (RESOURCE_URI, APP_MIME_TYPE)
    [content] = read.contents
    assert (str(content.uri), content.mime_type) == (RESOURCE_URI, "text/html;profile=mcp-app")
    assert content.meta == {
        "ui": {
            "csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": []},
            "prefersBorder": False,
        }
    }
    html = getattr(content, "text", "")
    assert html == card_html()
    assert html.startswith("<!doctype html>")
    assert "clarion:inbox.css" not in html
    assert "--accent:" in html
    for external in ("http://", "https://", "src=", "href=", "@import", "url("):
        assert external not in html, external  # nothing is fetched from anywhere


async def test_reading_another_resource_is_an_error(
    world: McpWorld, alice: Person, mode: str
) -> None:
    async with apps_client(world.agent_url, token=alice.token, mode=mode) as client:
        with pytest.raises(MCPError, match="unknown resource: ui://clarion/other"):
            await client.read_resource("ui://clarion/other")


# -- answering through the card ------------------------------------------------------------------


async def _card_of(client: Client, args: dict[str, Any]) -> dict[str, Any]:
    """What the card shows once the host delivered the ask's arguments (polls until the ask
    is recorded)."""
    with anyio.fail_after(20):
        while True:
            result = await client.call_tool(STATUS_TOOL, {"ask": args})
            if not result.is_error:
                return structured(result)
            assert tool_error(result) == (NOT_FOUND, {"code": "NOT_FOUND"})
            await anyio.sleep(0.05)


async def _recorded_surface(world: McpWorld, pending_id: str) -> tuple[Surface, IdentityKind]:
    bundle = await world.services.resolver.authorize_bundle(Identity.internal(), pending_id)
    [recorded] = {row.resolved_by for row in bundle.rows}
    assert recorded is not None
    return recorded.surface, recorded.kind


async def test_the_card_answers_the_waiting_ask_once_and_a_second_answer_gets_the_replay(
    world: McpWorld, alice: Person, mode: str, surface: str
) -> None:
    url, token = await _endpoint(world, alice, surface)
    args = {"questions": question_args(2), "context": "Pick one"}
    asked: list[CallToolResult] = []
    async with (
        apps_client(url, token=token, mode=mode) as agent,
        anyio.create_task_group() as tasks,
    ):

        async def ask() -> None:
            asked.append(await agent.call_tool(ASK, args))

        tasks.start_soon(ask)
        async with apps_client(url, token=token, mode=mode) as host:
            card = await _card_of(host, args)
            assert card["status"] == "pending"
            assert (card["context"], card["response"], card["resolved_by"]) == (
                "Pick one",
                None,
                None,
            )
            assert [q["question_id"] for q in card["questions"]] == ["q1", "q2"]
            assert card["questions"][0]["options"][1] == {
                "option_id": "q1_opt2",
                "label": "Choice 2",
                "description": "Means 2",
            }
            pending_id = card["pending_id"]
            won = structured(
                await host.call_tool(
                    ANSWER_TOOL, {"pending_id": pending_id, "answers": answers_for(2, option=2)}
                )
            )
            again = structured(
                await host.call_tool(
                    ANSWER_TOOL, {"pending_id": pending_id, "answers": answers_for(2, option=1)}
                )
            )
    assert (won["claimed"], won["status"]) == (True, "answered")
    assert won["resolved_by"]["surface"] == "mcp_app"
    assert [a["selected_options"] for a in won["response"]["answers"]] == [
        ["q1_opt2"],
        ["q2_opt2"],
    ]
    assert (again["claimed"], again["status"]) == (False, "answered")
    assert again["response"]["answers"] == won["response"]["answers"]  # the winner's (N4)
    assert again["resolved_by"] == won["resolved_by"]
    [result] = asked
    answered = structured(result)
    assert answered["q1"]["selected_options"] == ["q1_opt2"]
    assert (result.meta or {})[PENDING_META_KEY] == pending_id  # for the card opened later
    recorded, kind = await _recorded_surface(world, pending_id)
    assert recorded is Surface.MCP_APP
    assert kind is (IdentityKind.USER if surface == "agent" else IdentityKind.AGENT)


async def test_a_card_opened_after_another_surface_answered_shows_the_winner(
    world: McpWorld, alice: Person, mode: str
) -> None:
    args = {"questions": question_args(1)}
    asked: list[CallToolResult] = []
    async with apps_client(world.agent_url, token=alice.token, mode=mode) as agent:
        async with anyio.create_task_group() as tasks:

            async def ask() -> None:
                asked.append(await agent.call_tool(ASK, args))

            tasks.start_soon(ask)
            async with apps_client(world.agent_url, token=alice.token, mode=mode) as host:
                pending_id = (await _card_of(host, args))["pending_id"]
                async with http_client(alice.token) as http:
                    response = await http.post(
                        world.respond_url(pending_id), json={"answers": answers_for(1, option=2)}
                    )
                assert response.status_code == 200
        [result] = asked
        assert (result.meta or {})[PENDING_META_KEY] == pending_id
        async with apps_client(world.agent_url, token=alice.token, mode=mode) as host:
            # The ask is over: its arguments find nothing open any more; its id reads the winner.
            gone = await host.call_tool(STATUS_TOOL, {"ask": args})
            card = structured(await host.call_tool(STATUS_TOOL, {"pending_id": pending_id}))
            late = structured(
                await host.call_tool(
                    ANSWER_TOOL, {"pending_id": pending_id, "answers": answers_for(1)}
                )
            )
    assert tool_error(gone) == (NOT_FOUND, {"code": "NOT_FOUND"})
    assert card["status"] == "answered"
    assert card["response"]["answers"][0]["selected_options"] == ["q1_opt2"]
    assert card["resolved_by"] == {
        "identity_id": alice.identity.user_id,
        "kind": "user",
        "display_name": "alice",
        "surface": "rest",
    }
    assert "claimed" not in card
    assert (late["claimed"], late["response"], late["resolved_by"]) == (
        False,
        card["response"],
        card["resolved_by"],
    )


async def test_a_client_without_apps_gets_no_result_meta(
    world: McpWorld, alice: Person, mode: str
) -> None:
    args = {"questions": question_args(1)}
    asked: list[CallToolResult] = []
    async with (
        mcp_client(world.agent_url, token=alice.token, mode=mode) as agent,
        anyio.create_task_group() as tasks,
    ):

        async def ask() -> None:
            asked.append(await agent.call_tool(ASK, args))

        tasks.start_soon(ask)
        async with apps_client(world.agent_url, token=alice.token, mode=mode) as host:
            pending_id = (await _card_of(host, args))["pending_id"]
            structured(
                await host.call_tool(
                    ANSWER_TOOL, {"pending_id": pending_id, "answers": answers_for(1)}
                )
            )
    [result] = asked
    assert structured(result)["q1"]["selected_options"] == ["q1_opt1"]
    assert PENDING_META_KEY not in (result.meta or {})


# -- visibility and validation -------------------------------------------------------------------


async def test_a_foreign_bundle_is_not_found_exactly_like_a_made_up_one(
    world: McpWorld, alice: Person, bob: Person, mode: str
) -> None:
    agent = await world.agent(alice)
    pending_id = await world.bundle(alice, agent)
    async with apps_client(world.agent_url, token=bob.token, mode=mode) as host:
        for arguments in (
            {"pending_id": pending_id},
            {"pending_id": "00000000-0000-4000-8000-000000000000"},
            {"ask": {"questions": question_args(1)}},
        ):
            status = await host.call_tool(STATUS_TOOL, arguments)
            assert tool_error(status) == (NOT_FOUND, {"code": "NOT_FOUND"}), arguments
        for target in (pending_id, "00000000-0000-4000-8000-000000000000"):
            answer = await host.call_tool(
                ANSWER_TOOL, {"pending_id": target, "answers": answers_for()}
            )
            assert tool_error(answer) == (NOT_FOUND, {"code": "NOT_FOUND"})
    async with apps_client(world.agent_url, token=alice.token, mode=mode) as host:
        mine = structured(await host.call_tool(STATUS_TOOL, {"pending_id": pending_id}))
    assert mine["status"] == "pending"  # still open: bob's attempts changed nothing


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "pending_id"),
        ({"pending_id": "p", "ask": {}}, "pending_id"),
        ({"pending_id": ""}, "pending_id"),
        ({"pending_id": 7}, "pending_id"),
        ({"ask": "questions"}, "ask"),
        ({"pending_id": "p", "extra": 1}, "extra"),
    ],
)
async def test_bad_status_arguments_name_the_field(
    world: McpWorld, alice: Person, arguments: dict[str, Any], field: str
) -> None:
    async with apps_client(world.agent_url, token=alice.token, mode="auto") as host:
        _, details = tool_error(await host.call_tool(STATUS_TOOL, arguments))
    assert details == {"code": "VALIDATION_ERROR", "field": field}


async def test_bad_answers_name_the_field_and_leave_the_bundle_open(
    world: McpWorld, alice: Person, mode: str
) -> None:
    agent = await world.agent(alice)
    pending_id = await world.bundle(alice, agent)
    wrong_option = [{"question_id": "q1", "selected_options": ["nope"], "custom_text": ""}]
    async with apps_client(world.agent_url, token=alice.token, mode=mode) as host:
        missing = await host.call_tool(ANSWER_TOOL, {"answers": answers_for()})
        mistyped = await host.call_tool(
            ANSWER_TOOL, {"pending_id": pending_id, "answers": [{"question_id": 1}]}
        )
        unknown = await host.call_tool(
            ANSWER_TOOL, {"pending_id": pending_id, "answers": wrong_option}
        )
        still = structured(await host.call_tool(STATUS_TOOL, {"pending_id": pending_id}))
    assert tool_error(missing) == (
        "pending_id is required",
        {"code": "VALIDATION_ERROR", "field": "pending_id"},
    )
    assert tool_error(mistyped)[1] == {
        "code": "VALIDATION_ERROR",
        "field": "answers[0].question_id",
    }
    assert tool_error(unknown) == (
        'answer 1 references unknown option_id "nope"',
        {"code": "VALIDATION_ERROR", "field": "answers[0].selected_options"},
    )
    assert still["status"] == "pending"
