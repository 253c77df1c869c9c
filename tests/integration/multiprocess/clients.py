"""The people and programs around a cluster: REST callers, MCP clients (the asking agent on its
in-session endpoint, a third party on ``/mcp``) and an event-stream reader."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
import attrs
import httpx2
from anyio.abc import ObjectReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

ASK: Final = "ask_user_question_kandev"
ANSWER: Final = "answer_question_kandev"
TIMEOUT: Final = httpx2.Timeout(30, read=120)


def question(number: int = 1) -> dict[str, Any]:
    return {
        "id": f"q{number}",
        "title": f"Q{number}",
        "prompt": f"Which way for question {number}?",
        "options": [
            {"label": "Left", "description": "Go left"},
            {"label": "Right", "description": "Go right"},
        ],
    }


def choose(option: int, *, text: str = "") -> list[dict[str, Any]]:
    """One answer for question ``q1``: option ``q1_opt<option>`` and optional free text."""
    return [{"question_id": "q1", "selected_options": [f"q1_opt{option}"], "custom_text": text}]


async def rest(
    base_url: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    http: httpx2.AsyncClient | None = None,
) -> Any:
    """One REST call (on ``http`` when given, e.g. to keep connections alive)."""
    if http is None:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as own:
            return await rest(base_url, method, path, body, http=own)
    response = await http.request(method, f"{base_url}{path}", json=body)
    assert response.status_code < 300, (response.status_code, response.text)
    return response.json()


@attrs.frozen
class AgentSession:
    task_id: str
    session_id: str


async def agent_session(base_url: str, title: str) -> AgentSession:
    """A workspace, a task and a running primary session."""
    workspace = await rest(base_url, "POST", "/api/v1/workspaces", {"name": f"{title} ws"})
    task = await rest(
        base_url, "POST", "/api/v1/tasks", {"title": title, "workspace_id": workspace["id"]}
    )
    session = await rest(
        base_url, "POST", f"/api/v1/tasks/{task['id']}/sessions", {"is_primary": True}
    )
    return AgentSession(task_id=task["id"], session_id=session["id"])


async def call_tool(url: str, tool: str, arguments: Mapping[str, Any]) -> CallToolResult:
    async with (
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        return await client.call_tool(tool, dict(arguments))


async def ask(base_url: str, session: AgentSession, *, number: int = 1) -> CallToolResult:
    """The agent asks one question on its in-session endpoint and blocks until answered."""
    return await call_tool(
        f"{base_url}/mcp/session/{session.session_id}", ASK, {"questions": [question(number)]}
    )


async def answer_over_mcp(
    base_url: str, pending_id: str, answers: list[dict[str, Any]]
) -> dict[str, Any]:
    result = await call_tool(
        f"{base_url}/mcp", ANSWER, {"pending_id": pending_id, "answers": answers}
    )
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def answer_over_rest(
    base_url: str,
    pending_id: str,
    answers: list[dict[str, Any]],
    *,
    http: httpx2.AsyncClient | None = None,
) -> dict[str, Any]:
    body = await rest(
        base_url,
        "POST",
        f"/api/v1/clarification/{pending_id}/respond",
        {"answers": answers},
        http=http,
    )
    assert isinstance(body, dict)
    return body


@attrs.frozen
class Created:
    """A ``bundle.created`` event: which bundle, in which session."""

    pending_id: str
    session_id: str


@asynccontextmanager
async def created_bundles(base_url: str) -> AsyncIterator[ObjectReceiveStream[Created]]:
    """Every ``bundle.created`` event on one replica's event stream, from when the stream is
    connected until the block ends."""
    sink, source = anyio.create_memory_object_stream[Created](1000)
    connected = anyio.Event()

    async def read() -> None:
        async with (
            sink,
            httpx2.AsyncClient(base_url=base_url, timeout=httpx2.Timeout(30, read=None)) as http,
            http.stream("GET", "/api/v1/events") as response,
        ):
            kind = ""
            async for line in response.aiter_lines():
                if line.startswith(": connected"):
                    connected.set()
                elif line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                elif line.startswith("data: ") and kind == "bundle.created":
                    data = json.loads(line.removeprefix("data: "))
                    await sink.send(Created(data["pending_id"], data["session_id"]))

    async with anyio.create_task_group() as tasks, source:
        tasks.start_soon(read)
        with anyio.fail_after(30):
            await connected.wait()
        yield source
        tasks.cancel_scope.cancel()
