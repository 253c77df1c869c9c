"""The other people and programs in a browser test: an asking agent on its in-session MCP
endpoint, a third party answering over the external MCP endpoint, and plain REST calls that
set up workspaces, tasks and sessions.

The browser driver owns the test thread, so every asynchronous client here runs on its own
event loop in a worker thread; a blocking ask is a :class:`~concurrent.futures.Future`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio
import attrs
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

ASK = "ask_user_question_kandev"
ANSWER = "answer_question_kandev"
CALL_TIMEOUT_S = 30.0

T = TypeVar("T")


def in_thread(function: Callable[[], Coroutine[Any, Any, T]]) -> Future[T]:
    """Run ``function`` on a fresh event loop in a daemon thread (never blocks the test)."""
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(anyio.run(function))
        except BaseException as exc:  # noqa: BLE001 — handed to whoever waits on the future
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return future


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


async def _call_tool(url: str, tool: str, arguments: Mapping[str, Any], token: str) -> Any:
    timeout = httpx2.Timeout(CALL_TIMEOUT_S, read=300)
    async with (
        httpx2.AsyncClient(headers=_headers(token), timeout=timeout) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result: CallToolResult = await client.call_tool(tool, dict(arguments))
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def call_tool(url: str, tool: str, arguments: Mapping[str, Any], *, token: str = "") -> Any:
    """One MCP tool call, waited for; returns the structured result."""
    return in_thread(lambda: _call_tool(url, tool, arguments, token)).result(CALL_TIMEOUT_S)


@attrs.frozen
class AgentSession:
    """A running agent session in a task: where it asks and with which token."""

    workspace_id: str
    task_id: str
    session_id: str
    agent_token: str


@attrs.frozen
class Rest:
    """Synchronous REST calls as one caller (a bearer token, or none with auth disabled)."""

    base_url: str
    token: str = ""

    def request(self, method: str, path: str, body: Any = None) -> Any:
        with httpx2.Client(base_url=self.base_url, headers=_headers(self.token)) as http:
            response = http.request(method, path, json=body)
        response.raise_for_status()
        return response.json()

    def agent_session(self, task_title: str) -> AgentSession:
        """A new workspace (owned by this caller when scoped) and task, with a running
        primary session."""
        workspace = self.request("POST", "/api/v1/workspaces", {"name": f"{task_title} workspace"})
        task = self.request(
            "POST", "/api/v1/tasks", {"title": task_title, "workspace_id": workspace["id"]}
        )
        session = self.request("POST", f"/api/v1/tasks/{task['id']}/sessions", {"is_primary": True})
        return AgentSession(
            workspace_id=workspace["id"],
            task_id=task["id"],
            session_id=session["id"],
            agent_token=session["agent_token"],
        )

    def create_bundle(
        self, session: AgentSession, questions: list[dict[str, Any]], context: str = ""
    ) -> str:
        """A bundle nobody waits on (``POST /clarification/request``); its ``pending_id``."""
        body = {"session_id": session.session_id, "questions": questions, "context": context}
        created = self.request("POST", "/api/v1/clarification/request", body)
        return str(created["pending_id"])

    def pending_ids(self) -> list[str]:
        listing = self.request("GET", "/api/v1/clarification/pending?limit=200")
        return [bundle["pending_id"] for bundle in listing["bundles"]]

    def start_turn(self, session: AgentSession) -> None:
        """A newer turn: the session's older bundles are superseded (not active, no winner)."""
        self.request("POST", f"/api/v1/sessions/{session.session_id}/turns", {})

    def finish(self, session: AgentSession) -> None:
        """End the session so none of its bundles stays pending for later tests."""
        self.request("PATCH", f"/api/v1/sessions/{session.session_id}", {"state": "COMPLETED"})


def ask(
    base_url: str, session: AgentSession, arguments: Mapping[str, Any], *, token: str = ""
) -> Future[Any]:
    """The agent asks on its in-session endpoint; the future resolves when a person answers."""
    url = f"{base_url}/mcp/session/{session.session_id}"
    return in_thread(lambda: _call_tool(url, ASK, arguments, token))


def answer_over_mcp(
    base_url: str, pending_id: str, answers: list[dict[str, Any]], *, token: str = ""
) -> Any:
    """A third party answers on the external MCP endpoint (``answer_question_kandev``)."""
    return call_tool(
        f"{base_url}/mcp", ANSWER, {"pending_id": pending_id, "answers": answers}, token=token
    )


def question(
    prompt: str, options: list[tuple[str, str]], *, qid: str = "", title: str = ""
) -> dict[str, Any]:
    """One question for ``ask_user_question`` or ``POST /clarification/request``; options are
    (label, description) pairs and get the ids ``q<i>_opt<j>``."""
    entry: dict[str, Any] = {
        "prompt": prompt,
        "options": [{"label": label, "description": text} for label, text in options],
    }
    if qid:
        entry["id"] = qid
    if title:
        entry["title"] = title
    return entry
