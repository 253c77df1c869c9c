"""docs/claude-code.md, step by step, with the MCP Python SDK's client in Claude Code's place
(issue #30): no Claude Code build runs here, so the client reports Claude Code's name and
speaks the same streamable HTTP to ``/mcp/agent``, and the person answers with exactly the
requests the web inbox sends (a cookie session from the token, then ``respond`` with the CSRF
token). Authentication is enabled, as the walkthrough's token setup has it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx2
import pytest
from mcp.types import Implementation

from clarion.adapters.mcp.errors import WAIT_ENDED_MESSAGE
from tests.integration.mcp.harness import (
    ASK,
    LIST_TASKS,
    McpWorld,
    Person,
    mcp_client,
    serving,
    structured,
    tool_error,
    watching,
)

pytestmark = pytest.mark.anyio

CLAUDE = Implementation(name="claude-code", version="2.1")
# The walkthrough's question, as the agent sends it.
DATABASE = {
    "context": "The service stores a few thousand rows.",
    "questions": [
        {
            "id": "db",
            "title": "Database",
            "prompt": "Which database should the new service use?",
            "options": [
                {"label": "SQLite", "description": "Embedded, zero setup"},
                {"label": "PostgreSQL", "description": "A server we already run"},
            ],
        }
    ],
}
DEPLOY = {
    "questions": [
        {
            "id": "deploy",
            "prompt": "Deploy on Friday?",
            "options": [
                {"label": "Yes", "description": "Ship it"},
                {"label": "No", "description": "Wait for Monday"},
            ],
        }
    ]
}


def chose(question: str, option: str, text: str = "") -> dict[str, Any]:
    """What the ask returns for one question answered with ``option``."""
    return {
        question: {
            "answered": True,
            "custom_text": text,
            "rejected": False,
            "selected_option": option,
            "selected_options": [option],
        },
        "rejected": False,
        "reject_reason": "",
    }


class Inbox:
    """The person's browser: signed in with their token, answering as the inbox page does."""

    def __init__(self, http: httpx2.AsyncClient, csrf: str) -> None:
        self._http = http
        self._csrf = csrf

    async def pending(self) -> list[dict[str, Any]]:
        response = await self._http.get("/api/v1/clarification/pending")
        assert response.status_code == 200, response.text
        bundles: list[dict[str, Any]] = response.json()["bundles"]
        return bundles

    async def answer(self, pending_id: str, question: str, option: str, text: str = "") -> None:
        response = await self._http.post(
            f"/api/v1/clarification/{pending_id}/respond",
            json={
                "answers": [
                    {"question_id": question, "selected_options": [option], "custom_text": text}
                ]
            },
            headers={"X-CSRF-Token": self._csrf},
        )
        assert response.status_code == 200, response.text
        assert response.json()["claimed"] is True

    async def get(self, path: str) -> Any:
        response = await self._http.get(path)
        assert response.status_code == 200, response.text
        return response.json()


OpenInbox = Callable[[McpWorld, Person], Awaitable[Inbox]]


@pytest.fixture(name="inbox_of")
async def fixture_inbox_of() -> AsyncIterator[OpenInbox]:
    """Sign a person in to a world's inbox (closed with the test)."""
    async with contextlib.AsyncExitStack() as stack:

        async def open_inbox(world: McpWorld, person: Person) -> Inbox:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(base_url=world.base_url, timeout=30)
            )
            signed_in = await http.post("/api/v1/auth/login", json={"token": person.token})
            assert signed_in.status_code == 200, signed_in.text
            return Inbox(http, signed_in.json()["csrf_token"])

        yield open_inbox


async def test_ask_from_claude_code_and_answer_from_the_inbox(
    sqlite_url: str, mode: str, inbox_of: OpenInbox
) -> None:
    """The walkthrough's "Ask" and "Answer from the inbox": the tools the agent sees, its
    blocked call returning the inbox's answer, the task named after the client, and the
    history recording the inbox as the surface."""
    async with serving(McpWorld.build(sqlite_url, progress_interval=0.05)) as world:
        alice = world.person("alice")
        inbox = await inbox_of(world, alice)
        results: list[dict[str, Any]] = []
        async with mcp_client(
            world.agent_url, token=alice.token, mode=mode, client_info=CLAUDE
        ) as agent:
            tools = {tool.name for tool in (await agent.list_tools()).tools}
            assert tools == {ASK, LIST_TASKS, "request_approval_kandev", "decide_approval_kandev"}
            async with watching(world) as events, anyio.create_task_group() as tasks:

                async def ask() -> None:
                    results.append(structured(await agent.call_tool(ASK, DATABASE)))

                tasks.start_soon(ask)
                created = await events.wait_for("bundle.created")
                [card] = await inbox.pending()
                assert card["pending_id"] == created.pending_id
                assert [o["option_id"] for o in card["questions"][0]["options"]] == [
                    "q1_opt1",
                    "q1_opt2",
                ]
                await inbox.answer(created.pending_id, "db", "q1_opt1", "Start small.")
        assert results == [chose("db", "q1_opt1", "Start small.")]
        [task] = (await inbox.get("/api/v1/tasks"))["tasks"]
        assert task["title"].startswith("claude-code 2.1 — ")
        [resolved] = (await inbox.get("/api/v1/clarification/resolved"))["bundles"]
        assert resolved["resolved_by"]["surface"] == "inbox"
        assert resolved["resolved_by"]["display_name"] == "alice"


async def test_a_late_answer_reaches_the_agent_by_the_same_call_or_with_its_next_question(
    sqlite_url: str, mode: str, inbox_of: OpenInbox
) -> None:
    """The walkthrough's "Where a late answer goes": the call ends (here the server's ask
    timeout, as a client's own timeout would), the WAIT_ENDED text says to call again; the
    answer given meanwhile comes back from the same call at once. An ask whose call ended is
    handed to the next, different question's result in ``earlier_answers``."""
    build = McpWorld.build(sqlite_url, progress_interval=0.05, ask_timeout=0.5)
    async with serving(build) as world:
        alice = world.person("alice")
        inbox = await inbox_of(world, alice)
        async with mcp_client(
            world.agent_url, token=alice.token, mode=mode, client_info=CLAUDE
        ) as agent:
            text, details = tool_error(await agent.call_tool(ASK, DATABASE))
            assert text.startswith(f"{WAIT_ENDED_MESSAGE}. Nobody has answered question ")
            assert f"call {ASK} again with exactly the same arguments" in text
            assert details["code"] == "WAIT_ENDED"
            first = details["pending_id"]
            assert [card["pending_id"] for card in await inbox.pending()] == [first]
            await inbox.answer(first, "db", "q1_opt2")
            assert structured(await agent.call_tool(ASK, DATABASE)) == chose("db", "q1_opt2")

            _, ended = tool_error(await agent.call_tool(ASK, DATABASE))  # asked anew
            await inbox.answer(ended["pending_id"], "db", "q1_opt1")
            results: list[dict[str, Any]] = []
            async with watching(world) as events, anyio.create_task_group() as tasks:

                async def ask_something_else() -> None:
                    results.append(structured(await agent.call_tool(ASK, DEPLOY)))

                tasks.start_soon(ask_something_else)
                created = await events.wait_for("bundle.created")
                await inbox.answer(created.pending_id, "deploy", "q1_opt2")
        [result] = results
        assert result == {
            **chose("deploy", "q1_opt2"),
            "earlier_answers": [
                {
                    "pending_id": ended["pending_id"],
                    "status": "answered",
                    "answers": chose("db", "q1_opt1"),
                }
            ],
        }
