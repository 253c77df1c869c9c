"""The published wire format, pinned byte for byte (issue #16: "one wire model" must not change
what goes over the wire).

One deterministic scenario drives every REST route of ``docs/rest-api.md`` and every tool on
the three MCP surfaces (``docs/mcp-tools.md``) — successes and the error bodies a caller can meet:
validation (400 / ``VALIDATION_ERROR``), 401, 403 (CSRF), 404 and ``NOT_FOUND`` (missing and
not visible, R10 / L1c), 409 and ``CONFLICT`` (superseded, cancelled, finished), 504 and the
ended ask, the loser's replay (R2, R2b), rejection, the detached answer's resume — and 401 from
every operation the OpenAPI document marks as protected. The test fails when an OpenAPI
operation or a listed tool is never exercised, so a new one must join the scenario. Each exchange's
status, media type and JSON body (tool calls: the whole ``CallToolResult``, text twin included)
is written as key-sorted JSON to ``tests/golden/wire/*.json`` together with the OpenAPI
documents and each surface's ``tools/list``; the test compares the texts byte for byte.

Determinism: ``build_clarion(clock=, ids=)`` gets a step clock and step ids
(``tests/golden/scenario.py``); only ``agent_token`` and ``csrf_token``, which come from
``secrets``, are replaced (see ``scrub``). Every request is well-formed ``application/json``
from a loopback Host, so gates on media type, Host or size do not touch these files.

Regenerate after an *intended* wire change, then review the diff:

    CLARION_UPDATE_GOLDEN=1 .venv/bin/pytest tests/golden

The run rewrites the files and fails once (so a regeneration is never mistaken for a pass).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.golden.approvals_scenario import approvals_scenario, is_approval_path
from tests.golden.scenario import (
    GOLDEN_DIR,
    Served,
    Transcript,
    check_golden,
    http_entry,
    serve,
    tool_entry,
    tools_listing,
)

pytestmark = pytest.mark.anyio

ASK = "ask_user_question_kandev"
ANSWER = "answer_question_kandev"
LIST_PENDING = "list_pending_questions_kandev"
LIST_TASKS = "list_tasks_kandev"
API = "/api/v1"
CLAR = f"{API}/clarification"
POLL_LIMIT_S = 20.0

Headers = dict[str, str]
# Operations added after the files' clock was laid out: their 401 case takes no clock step
# (a 401 makes no id and no time), so every later case keeps its ids and times.
STEPLESS_OPERATIONS = frozenset({"getClarificationReceipt"})


def questions(count: int, *, topic: str = "Question", options: int = 2) -> list[dict[str, Any]]:
    return [
        {
            "id": f"q{i}",
            "title": f"T{i}",
            "prompt": f"{topic} {i}?",
            "options": [
                {"label": f"Choice {j}", "description": f"Means {j}"} for j in range(1, options + 1)
            ],
        }
        for i in range(1, count + 1)
    ]


def bearer(token: str) -> Headers:
    return {"Authorization": f"Bearer {token}"}


class Wire:
    """Records REST exchanges (one clock step each) against a served Clarion."""

    def __init__(self, served: Served, http: httpx2.AsyncClient, transcript: Transcript) -> None:
        self.served = served
        self.http = http
        self.transcript = transcript

    async def call(
        self,
        case: str,
        method: str,
        path: str,
        *,
        json: object = None,
        headers: Headers | None = None,
        record: bool = True,
        advance: bool = True,
    ) -> httpx2.Response:
        """One exchange; ``json=None`` sends no body (GET), every body is JSON. ``advance``:
        False for a read added later that makes nothing (no id, no time), so the clock — and
        every id and time after it — stays where the files had it."""
        if record and advance:
            self.served.clock.advance()
        self.http.cookies.clear()  # a cookie is sent only where a case passes one
        response = await self.http.request(
            method, self.served.url(path), json=json, headers=headers or {}
        )
        if record:
            self.transcript.add(case, http_entry(f"{method} {path}", response))
        return response

    async def document(self, path: str, golden: str) -> object:
        """A GET whose JSON body is a golden file of its own (``golden``, with ``{mode}`` the
        auth mode): the transcript records status and media type and names that file."""
        response = await self.call("", "GET", path, record=False)
        self.served.clock.advance()
        mode = "enabled" if self.served.clarion.settings.auth_enabled else "disabled"
        entry = http_entry(f"GET {path}", response)
        entry["body"] = f"<{golden.format(mode=mode)}>"
        self.transcript.add(f"{path}: the document", entry)
        return response.json()

    async def until(self, probe: Callable[[], Awaitable[bool]]) -> None:
        """Poll (unrecorded, within the current step) until ``probe`` holds."""
        with anyio.fail_after(POLL_LIMIT_S):
            while not await probe():
                await anyio.sleep(0.01)

    async def waiting(self, session_id: str, headers: Headers) -> None:
        """Until the session's ask is durable and the session says WAITING_FOR_INPUT."""

        async def probe() -> bool:
            response = await self.call(
                "", "GET", f"{API}/sessions/{session_id}", headers=headers, record=False
            )
            return bool(response.json().get("state") == "WAITING_FOR_INPUT")

        await self.until(probe)

    async def live(self, pending_id: str) -> None:
        """Until a caller really waits on ``pending_id``."""
        with anyio.fail_after(POLL_LIMIT_S):
            await self.served.waiters.entered(pending_id).wait()


def sse_frames(text: str) -> list[list[object]]:
    """The frames of an event stream, each a list of its lines with ``data:`` parsed as JSON
    (compared key-sorted like every other body). Heartbeat comments are dropped: whether one
    falls inside the recorded window depends only on how long the run takes."""
    frames: list[list[object]] = []
    for frame in text.split("\n\n"):
        if not frame or frame == ": heartbeat":
            continue
        lines: list[object] = []
        for line in frame.split("\n"):
            if line.startswith("data: "):
                lines.append({"data": json.loads(line.removeprefix("data: "))})
            else:
                lines.append(line)
        frames.append(lines)
    assert text.endswith("\n\n"), text
    return frames


def _created(response: httpx2.Response, key: str = "id") -> str:
    assert response.status_code in (200, 201), response.text
    value = response.json()[key]
    assert isinstance(value, str)
    return value


@asynccontextmanager
async def mcp_session(url: str, token: str, mode: str = "auto") -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=bearer(token), timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


# --- the REST scenario (auth enabled) ---------------------------------------------------------


async def rest_scenario(served: Served, http: httpx2.AsyncClient) -> tuple[Transcript, object]:
    transcript = Transcript("rest")
    w = Wire(served, http, transcript)
    auth = served.clarion.authentication
    served.clock.advance()
    alice_user = auth.create_user("alice")
    alice_token = auth.issue_token(alice_user.id, name="alice-token").token
    bob_user = auth.create_user("bob")
    bob_token = auth.issue_token(bob_user.id, name="bob-token").token
    alice, bob = bearer(alice_token), bearer(bob_token)

    # Operations and identity.
    await w.call("healthz", "GET", "/healthz")
    openapi = await w.document("/openapi.json", "openapi-auth-{mode}.json")
    await w.call("me: no identity is 401", "GET", f"{API}/auth/me")
    await w.call("me: a bearer token", "GET", f"{API}/auth/me", headers=alice)
    await w.call(
        "login: a token that does not authenticate is 401",
        "POST",
        f"{API}/auth/login",
        json={"token": "clarion_pat_00000000_nope"},
    )
    await w.call("login: a wrong type is 400", "POST", f"{API}/auth/login", json={"token": 7})
    login = await w.call(
        "login: a personal access token", "POST", f"{API}/auth/login", json={"token": alice_token}
    )
    csrf = login.json()["csrf_token"]
    # Read from Set-Cookie by hand: the step clock's expiry lies in the real past, so an HTTP
    # client's cookie jar would drop the cookies as expired.
    pairs = [line.split(";", 1)[0] for line in login.headers.get_list("set-cookie")]
    cookie = {"Cookie": "; ".join(pairs)}
    await w.call("me: the session cookie", "GET", f"{API}/auth/me", headers=cookie)
    await w.call(
        "workspaces: a cookie write without CSRF is 403",
        "POST",
        f"{API}/workspaces",
        json={"name": "x"},
        headers=cookie,
    )
    await w.call(
        "logout: without CSRF is 403", "POST", f"{API}/auth/logout", json={}, headers=cookie
    )
    await w.call(
        "logout: with CSRF",
        "POST",
        f"{API}/auth/logout",
        json={},
        headers={**cookie, "X-CSRF-Token": csrf},
    )
    await w.call("me: after logout the cookie is 401", "GET", f"{API}/auth/me", headers=cookie)

    # The reference host.
    ws = _created(
        await w.call(
            "workspaces: create", "POST", f"{API}/workspaces", json={"name": "Alpha"}, headers=alice
        )
    )
    await w.call(
        "workspaces: unknown field is 400",
        "POST",
        f"{API}/workspaces",
        json={"name": "x", "colour": "red"},
        headers=alice,
    )
    await w.call("workspaces: no identity is 401", "POST", f"{API}/workspaces", json={"name": "x"})
    bob_ws = _created(
        await w.call(
            "workspaces: bob creates his own",
            "POST",
            f"{API}/workspaces",
            json={"name": "Bravo"},
            headers=bob,
        )
    )
    await w.call("workspaces: alice's list", "GET", f"{API}/workspaces", headers=alice)
    task = _created(
        await w.call(
            "tasks: create",
            "POST",
            f"{API}/tasks",
            json={"title": "Build the service", "workspace_id": ws},
            headers=alice,
        )
    )
    await w.call(
        "tasks: a workspace you may not see is 404",
        "POST",
        f"{API}/tasks",
        json={"title": "Sneaky", "workspace_id": bob_ws},
        headers=alice,
    )
    await w.call(
        "tasks: a wrong type is 400", "POST", f"{API}/tasks", json={"title": 3}, headers=alice
    )
    session = _created(
        await w.call(
            "sessions: create a primary session",
            "POST",
            f"{API}/tasks/{task}/sessions",
            json={"is_primary": True},
            headers=alice,
        )
    )
    await w.call(
        "sessions: a task you may not see is 404",
        "POST",
        f"{API}/tasks/{task}/sessions",
        json={},
        headers=bob,
    )
    await w.call("sessions: read", "GET", f"{API}/sessions/{session}", headers=alice)
    await w.call(
        "sessions: a session you may not see is 404",
        "GET",
        f"{API}/sessions/{session}",
        headers=bob,
    )
    await w.call(
        "sessions: an unknown state is 400",
        "PATCH",
        f"{API}/sessions/{session}",
        json={"state": "DREAMING"},
        headers=alice,
    )
    await w.call("tasks: list, nothing pending", "GET", f"{API}/tasks", headers=alice)

    # Creating bundles (nobody waits: POST /request).
    ask_body = {
        "session_id": session,
        "questions": questions(2, topic="Database"),
        "context": "A few thousand rows.",
    }
    first = _created(
        await w.call("request: create", "POST", f"{CLAR}/request", json=ask_body, headers=alice),
        "pending_id",
    )
    await w.call(
        "request: the same questions again return the live bundle",
        "POST",
        f"{CLAR}/request",
        json=ask_body,
        headers=alice,
    )
    await w.call(
        "request: one option is 400 (N7)",
        "POST",
        f"{CLAR}/request",
        json={"session_id": session, "questions": questions(1, options=1)},
        headers=alice,
    )
    await w.call(
        "request: an unknown field is 400",
        "POST",
        f"{CLAR}/request",
        json={**ask_body, "urgent": True},
        headers=alice,
    )
    await w.call(
        "request: a missing session is 404",
        "POST",
        f"{CLAR}/request",
        json={**ask_body, "session_id": "no-such-session"},
        headers=alice,
    )
    await w.call(
        "request: a session you may not see is the same 404 (facts §9.20)",
        "POST",
        f"{CLAR}/request",
        json=ask_body,
        headers=bob,
    )
    await w.call("request: no identity is 401", "POST", f"{CLAR}/request", json=ask_body)
    await w.call("pending: alice sees the bundle (L1c)", "GET", f"{CLAR}/pending", headers=alice)
    await w.call("pending: bob sees nothing (L1c)", "GET", f"{CLAR}/pending", headers=bob)
    await w.call("pending: a bad limit is 400", "GET", f"{CLAR}/pending?limit=many", headers=alice)
    await w.call(
        "pending: a bad cursor is 400", "GET", f"{CLAR}/pending?cursor=%21%21", headers=alice
    )
    await w.call(
        "pending: a bad created_since is 400",
        "GET",
        f"{CLAR}/pending?created_since=yesterday",
        headers=alice,
    )
    await w.call("pending: no identity is 401", "GET", f"{CLAR}/pending")
    await w.call(
        "tasks: list, a clarification pending (T1, T2)", "GET", f"{API}/tasks", headers=alice
    )
    await w.call("live request: a created bundle", "GET", f"{CLAR}/{first}", headers=alice)

    # Answering: validation, visibility, the winner, the loser's replay, the resume.
    respond = f"{CLAR}/{first}/respond"
    good = {
        "answers": [
            {"question_id": "q2", "selected_options": ["q2_opt2", "q2_opt1", "q2_opt2"]},
            {"question_id": "q1", "selected_options": ["q1_opt1"], "custom_text": "  trimmed  "},
        ]
    }
    await w.call(
        "respond: an unknown option is 400 (N8)",
        "POST",
        respond,
        json={
            "answers": [
                {"question_id": "q1", "selected_options": ["nope"]},
                {"question_id": "q2", "selected_options": ["q2_opt1"]},
            ]
        },
        headers=alice,
    )
    await w.call(
        "respond: reason is an unknown field (facts §9.1)",
        "POST",
        respond,
        json={"rejected": True, "reason": "no"},
        headers=alice,
    )
    await w.call(
        "respond: a wrong type is 400",
        "POST",
        respond,
        json={"answers": [{"question_id": "q1", "custom_text": 5}]},
        headers=alice,
    )
    await w.call("respond: not visible is 404 (R10)", "POST", respond, json=good, headers=bob)
    await w.call(
        "respond: unknown pending id is 404",
        "POST",
        f"{CLAR}/no-such-bundle/respond",
        json=good,
        headers=alice,
    )
    await w.call(
        "respond: the winner, detached, resumes the agent (N3a normalized)",
        "POST",
        respond,
        json=good,
        headers=alice,
    )
    await w.call(
        "respond: a loser gets the winner's replay (R2, R2b)",
        "POST",
        respond,
        json={"rejected": True, "reject_reason": "too late"},
        headers=alice,
    )
    await w.call(
        "resumes: the outbox's resume prompt",
        "GET",
        f"{API}/sessions/{session}/resumes",
        headers=alice,
    )
    await w.call(
        "messages: the transcript", "GET", f"{API}/sessions/{session}/messages", headers=alice
    )
    await w.call(
        "cancel: nobody waits is 404", "POST", f"{CLAR}/{first}/cancel", json={}, headers=alice
    )

    await w.call("live request: answered is 404", "GET", f"{CLAR}/{first}", headers=alice)

    # Pagination (L6, L9).
    for topic in ("Cache", "Queue"):
        await w.call(
            f"request: a {topic.lower()} bundle",
            "POST",
            f"{CLAR}/request",
            json={"session_id": session, "questions": questions(1, topic=topic)},
            headers=alice,
        )
    page = await w.call("pending: page 1 of 2", "GET", f"{CLAR}/pending?limit=1", headers=alice)
    await w.call(
        "pending: page 2 of 2",
        "GET",
        f"{CLAR}/pending?limit=1&cursor={page.json()['next_cursor']}",
        headers=alice,
    )
    await w.call(
        "pending: created_since and workspace_id",
        "GET",
        f"{CLAR}/pending?created_since=2026-03-01T09:00:00Z&workspace_id={ws}",
        headers=alice,
    )
    superseded = page.json()["bundles"][0]["pending_id"]

    # The event stream: its prelude and the frame of one event.
    async with http.stream("GET", served.url(f"{API}/events"), headers=alice) as stream:
        received = ""
        chunks = stream.aiter_text()
        while not received.endswith("\n\n"):
            received += await anext(chunks)
        await w.call(
            "request: a bundle while the event stream is open",
            "POST",
            f"{CLAR}/request",
            json={"session_id": session, "questions": questions(1, topic="Events")},
            headers=alice,
        )
        with anyio.fail_after(POLL_LIMIT_S):
            while "event:" not in received or not received.endswith("\n\n"):
                received += await anext(chunks)
        transcript.add(
            "events: connected, then bundle.created",
            {
                "request": f"GET {API}/events",
                "status": stream.status_code,
                "content_type": stream.headers.get("content-type", ""),
                "frames": sse_frames(received),
            },
        )

    # A newer turn supersedes (D4): answering the older bundle is 409.
    await w.call(
        "turns: start a newer turn",
        "POST",
        f"{API}/sessions/{session}/turns",
        json={},
        headers=alice,
    )
    await w.call(
        "turns: a session you may not see is 404",
        "POST",
        f"{API}/sessions/{session}/turns",
        json={},
        headers=bob,
    )
    await w.call(
        "respond: superseded by a newer turn is 409",
        "POST",
        f"{CLAR}/{superseded}/respond",
        json={"answers": [{"question_id": "q1", "selected_options": ["q1_opt1"]}]},
        headers=alice,
    )

    # A waiting caller: GET /{id}, /wait answered by a rejection.
    waited = _created(
        await w.call(
            "request: a bundle to wait on",
            "POST",
            f"{CLAR}/request",
            json={"session_id": session, "questions": questions(1, topic="Deploy")},
            headers=alice,
        ),
        "pending_id",
    )
    results: dict[str, httpx2.Response] = {}

    async def wait_on(pending_id: str) -> None:
        results[pending_id] = await w.call(
            "", "GET", f"{CLAR}/{pending_id}/wait", headers=alice, record=False
        )

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait_on, waited)
        await w.live(waited)
        await w.call("live request: while someone waits", "GET", f"{CLAR}/{waited}", headers=alice)
        await w.call("live request: not visible is 404", "GET", f"{CLAR}/{waited}", headers=bob)
        await w.call(
            "respond: reject with a reason",
            "POST",
            f"{CLAR}/{waited}/respond",
            json={"rejected": True, "reject_reason": "Not now"},
            headers=alice,
        )
    transcript.add("wait: the rejection", http_entry(f"GET {CLAR}/{waited}/wait", results[waited]))
    await w.call("wait: not visible is 404", "GET", f"{CLAR}/{waited}/wait", headers=bob)
    # Issue #34: the resolution's signed receipt, and the keys that verify it.
    receipt = f"{CLAR}/{waited}/receipt"
    await w.call("receipt: the rejection's", "GET", receipt, headers=alice, advance=False)
    await w.call("receipt: not visible is 404", "GET", receipt, headers=bob, advance=False)
    keys = "/.well-known/clarion-receipt-keys"
    await w.call("receipt keys: published", "GET", keys, advance=False)

    # Cancel ends the wait (504), then the bundle is settled.
    cancelled = _created(
        await w.call(
            "request: a bundle to cancel",
            "POST",
            f"{CLAR}/request",
            json={"session_id": session, "questions": questions(1, topic="Region")},
            headers=alice,
        ),
        "pending_id",
    )
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait_on, cancelled)
        await w.live(cancelled)
        await w.call(
            "cancel: not visible is 404", "POST", f"{CLAR}/{cancelled}/cancel", json={}, headers=bob
        )
        await w.call(
            "cancel: the waiting agent's bundle",
            "POST",
            f"{CLAR}/{cancelled}/cancel",
            json={},
            headers=alice,
        )
    transcript.add(
        "wait: ended by the cancel is 504",
        http_entry(f"GET {CLAR}/{cancelled}/wait", results[cancelled]),
    )
    await w.call(
        "respond: a cancelled bundle is 409",
        "POST",
        f"{CLAR}/{cancelled}/respond",
        json={"rejected": True},
        headers=alice,
    )
    await w.call(
        "cancel: again, nobody waits", "POST", f"{CLAR}/{cancelled}/cancel", json={}, headers=alice
    )
    await w.call(
        "receipt: a cancelled bundle has none (409)",
        "GET",
        f"{CLAR}/{cancelled}/receipt",
        headers=alice,
        advance=False,
    )

    # A newer turn releases a waiting caller (504); cancelling afterwards finds nobody waiting.
    stale = _created(
        await w.call(
            "request: a bundle a newer turn supersedes",
            "POST",
            f"{CLAR}/request",
            json={"session_id": session, "questions": questions(1, topic="Zone")},
            headers=alice,
        ),
        "pending_id",
    )
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait_on, stale)
        await w.live(stale)
        await w.call(
            "turns: a newer turn under a waiting caller",
            "POST",
            f"{API}/sessions/{session}/turns",
            json={},
            headers=alice,
        )
        await w.call(
            "cancel: superseded, nobody waits any more",
            "POST",
            f"{CLAR}/{stale}/cancel",
            json={},
            headers=alice,
        )
    transcript.add(
        "wait: ended by a newer turn is 504",
        http_entry(f"GET {CLAR}/{stale}/wait", results[stale]),
    )

    # The turn ends: the waiting caller's wait ends (504), its bundle detaches.
    detached = _created(
        await w.call(
            "request: a bundle whose turn ends",
            "POST",
            f"{CLAR}/request",
            json={"session_id": session, "questions": questions(1, topic="Budget")},
            headers=alice,
        ),
        "pending_id",
    )
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait_on, detached)
        await w.live(detached)
        await w.call(
            "turns: complete the current turn",
            "POST",
            f"{API}/sessions/{session}/turns/current/complete",
            json={},
            headers=alice,
        )
    transcript.add(
        "wait: ended by the turn's end is 504",
        http_entry(f"GET {CLAR}/{detached}/wait", results[detached]),
    )
    await w.call(
        "turns: complete again detaches nothing",
        "POST",
        f"{API}/sessions/{session}/turns/current/complete",
        json={},
        headers=alice,
    )
    await w.call(
        "turns: complete, not visible is 404",
        "POST",
        f"{API}/sessions/{session}/turns/current/complete",
        json={},
        headers=bob,
    )
    await w.call("wait: unknown is 404", "GET", f"{CLAR}/no-such-bundle/wait", headers=alice)

    # A finished session: its bundles expire, new ones are 409.
    await w.call(
        "sessions: complete the session",
        "PATCH",
        f"{API}/sessions/{session}",
        json={"state": "COMPLETED"},
        headers=alice,
    )
    await w.call(
        "respond: an expired bundle is 409",
        "POST",
        f"{CLAR}/{detached}/respond",
        json={"rejected": True},
        headers=alice,
    )
    await w.call(
        "request: a finished session is 409",
        "POST",
        f"{CLAR}/request",
        json={"session_id": session, "questions": questions(1, topic="Late")},
        headers=alice,
    )
    await w.call(
        "messages: not visible is 404", "GET", f"{API}/sessions/{session}/messages", headers=bob
    )
    await w.call(
        "resumes: not visible is 404", "GET", f"{API}/sessions/{session}/resumes", headers=bob
    )
    # Issue #20: the resolved list (additive; the respond envelopes above are unchanged).
    await w.call(
        "resolved: alice's settled bundles, newest first, with who resolved them",
        "GET",
        f"{CLAR}/resolved",
        headers=alice,
    )
    await w.call("resolved: bob sees none of alice's", "GET", f"{CLAR}/resolved", headers=bob)
    await w.call(
        "resolved: a page of one has a next_cursor",
        "GET",
        f"{CLAR}/resolved?limit=1",
        headers=alice,
    )
    await w.call(
        "resolved: a corrupt cursor is 400", "GET", f"{CLAR}/resolved?cursor=%25", headers=alice
    )
    await w.call("events: no identity is 401", "GET", f"{API}/events")
    # Every operation the document says may answer 401 does, without credentials (login's 401
    # is for a token that does not authenticate, recorded above).
    assert isinstance(openapi, dict)
    for template, operations in openapi["paths"].items():
        for method, operation in operations.items():
            if is_approval_path(template):
                continue  # issue #33's routes: recorded by the approvals scenario
            if "401" in operation["responses"] and not template.endswith("/auth/login"):
                path = re.sub(r"\{\w+\}", "x", template)
                body: object = {} if method in ("post", "patch") else None
                await w.call(
                    f"401: {method.upper()} {template}",
                    method.upper(),
                    path,
                    json=body,
                    advance=operation["operationId"] not in STEPLESS_OPERATIONS,
                )
    await w.call("unknown path is 404", "GET", f"{API}/nowhere", headers=alice)
    await w.call("unsupported method is 405", "PUT", f"{API}/workspaces", json={}, headers=alice)
    return transcript, openapi


# --- the MCP scenario (auth enabled, both surfaces) -------------------------------------------


class Tools:
    """Records tool calls (one clock step each)."""

    def __init__(self, served: Served, transcript: Transcript) -> None:
        self.served = served
        self.transcript = transcript

    async def call(
        self, case: str, client: Client, tool: str, arguments: dict[str, Any]
    ) -> CallToolResult:
        self.served.clock.advance()
        result = await client.call_tool(tool, arguments)
        self.transcript.add(case, tool_entry(tool, arguments, result))
        return result


async def mcp_scenario(
    served: Served, http: httpx2.AsyncClient
) -> tuple[Transcript, dict[str, object]]:
    transcript = Transcript("mcp")
    w = Wire(served, http, transcript)
    t = Tools(served, transcript)
    auth = served.clarion.authentication
    served.clock.advance()
    carol_user = auth.create_user("carol")
    carol_token = auth.issue_token(carol_user.id, name="carol-token").token
    dave_user = auth.create_user("dave")
    dave_token = auth.issue_token(dave_user.id, name="dave-token").token
    carol = bearer(carol_token)
    ws = _created(
        await w.call(
            "setup: workspace", "POST", f"{API}/workspaces", json={"name": "MCP"}, headers=carol
        )
    )
    task = _created(
        await w.call(
            "setup: task",
            "POST",
            f"{API}/tasks",
            json={"title": "Agent work", "workspace_id": ws},
            headers=carol,
        )
    )
    created = await w.call(
        "setup: session",
        "POST",
        f"{API}/tasks/{task}/sessions",
        json={"is_primary": True},
        headers=carol,
    )
    session = _created(created)
    agent_token = created.json()["agent_token"]
    assert isinstance(agent_token, str)
    external_url = served.url("/mcp")
    session_url = served.url(f"/mcp/session/{session}")

    # The HTTP gate in front of the tools.
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "golden", "version": "1"},
        },
    }
    mcp_headers = {"Accept": "application/json, text/event-stream"}
    await w.call("external: no token is 401", "POST", "/mcp", json=initialize, headers=mcp_headers)
    await w.call(
        "in-session: a personal token is not the agent token (401)",
        "POST",
        f"/mcp/session/{session}",
        json=initialize,
        headers={**mcp_headers, **carol},
    )

    catalogs: dict[str, object] = {}
    async with (
        mcp_session(external_url, carol_token) as external,
        mcp_session(session_url, agent_token) as agent,
        mcp_session(external_url, dave_token) as stranger,
    ):
        served.clock.advance()
        catalogs["external"] = tools_listing((await external.list_tools()).tools)
        catalogs["session"] = tools_listing((await agent.list_tools()).tools)
        await t.call("external list_tasks", external, LIST_TASKS, {})
        await t.call("in-session list_tasks", agent, LIST_TASKS, {"workspace_id": ws})
        await t.call(
            "list_tasks: an unknown argument is a validation error",
            external,
            LIST_TASKS,
            {"workspace": ws},
        )
        await t.call(
            "ask: one option is a validation error (N7)",
            agent,
            ASK,
            {"questions": questions(1, options=1)},
        )
        await t.call("ask: no questions is a validation error (N6)", agent, ASK, {"questions": []})

        asked: dict[str, CallToolResult] = {}

        async def ask(key: str, arguments: dict[str, Any]) -> None:
            asked[key] = await agent.call_tool(ASK, arguments)

        async def pending_id() -> str:
            """The one listed bundle's id (read over REST, unrecorded)."""
            response = await w.call("", "GET", f"{CLAR}/pending", headers=carol, record=False)
            bundles = response.json()["bundles"]
            assert len(bundles) == 1, bundles
            value = bundles[0]["pending_id"]
            assert isinstance(value, str)
            return value

        # 1. A blocked agent receives the external answer in the same call.
        ask_args: dict[str, Any] = {
            "questions": questions(2, topic="Stack"),
            "context_paragraphs": ["First paragraph.", "Second paragraph."],
        }
        async with anyio.create_task_group() as tasks:
            served.clock.advance()
            tasks.start_soon(ask, "answered", ask_args)
            await w.waiting(session, carol)
            answered = await pending_id()
            await t.call("list_pending: the blocked ask's bundle", external, LIST_PENDING, {})
            await t.call(
                "answer: an unknown option is a validation error (N8)",
                external,
                ANSWER,
                {
                    "pending_id": answered,
                    "answers": [{"question_id": "q1", "selected_options": ["zzz"]}],
                },
            )
            await t.call(
                "answer: answers and rejected together are a validation error",
                external,
                ANSWER,
                {
                    "pending_id": answered,
                    "answers": [{"question_id": "q1", "selected_options": ["q1_opt1"]}],
                    "rejected": True,
                },
            )
            await t.call(
                "answer: not visible is NOT_FOUND (R10)",
                stranger,
                ANSWER,
                {"pending_id": answered, "rejected": True},
            )
            await t.call(
                "answer: the winner (claimed)",
                external,
                ANSWER,
                {
                    "pending_id": answered,
                    "answers": [
                        {"question_id": "q1", "selected_options": ["q1_opt2", "q1_opt1"]},
                        {"question_id": "q2", "custom_text": "Something else"},
                    ],
                },
            )
        transcript.add("ask: the answered result", tool_entry(ASK, ask_args, asked["answered"]))
        await t.call(
            "answer: a loser gets the winner's replay (R2)",
            external,
            ANSWER,
            {"pending_id": answered, "rejected": True, "reject_reason": "late"},
        )
        await t.call(
            "answer: unknown pending id is NOT_FOUND",
            external,
            ANSWER,
            {"pending_id": "no-such-bundle", "rejected": True},
        )

        # 2. A rejection reaches the blocked agent with its reason.
        reject_args: dict[str, Any] = {"questions": questions(1, topic="Color"), "context": "c"}
        async with anyio.create_task_group() as tasks:
            served.clock.advance()
            tasks.start_soon(ask, "rejected", reject_args)
            await w.waiting(session, carol)
            rejected = await pending_id()
            await t.call(
                "answer: reject with a reason",
                external,
                ANSWER,
                {"pending_id": rejected, "rejected": True, "reject_reason": "Ask later"},
            )
        transcript.add("ask: the rejected result", tool_entry(ASK, reject_args, asked["rejected"]))

        # 3. The turn ends under a blocked ask: the wait ends, the bundle stays answerable and a
        # later answer resumes the agent.
        ended_args: dict[str, Any] = {"questions": questions(1, topic="Owner")}
        async with anyio.create_task_group() as tasks:
            served.clock.advance()
            tasks.start_soon(ask, "ended", ended_args)
            await w.waiting(session, carol)
            ended = await pending_id()
            await w.call(
                "turn: complete under a blocked ask",
                "POST",
                f"{API}/sessions/{session}/turns/current/complete",
                json={},
                headers=carol,
            )
        transcript.add("ask: ended by the turn's end", tool_entry(ASK, ended_args, asked["ended"]))
        await t.call("list_pending: the detached bundle is listed", external, LIST_PENDING, {})
        await t.call(
            "answer: a detached bundle resumes the agent",
            external,
            ANSWER,
            {
                "pending_id": ended,
                "answers": [{"question_id": "q1", "selected_options": ["q1_opt1"]}],
            },
        )

        # 4. Listing arguments, and a superseded bundle.
        for topic in ("Alpha", "Beta"):
            await w.call(
                f"request: {topic.lower()} bundle",
                "POST",
                f"{CLAR}/request",
                json={"session_id": session, "questions": questions(1, topic=topic)},
                headers=carol,
            )
        first_page = await t.call(
            "list_pending: a page of one", external, LIST_PENDING, {"limit": 1, "workspace_id": ws}
        )
        structured = first_page.structured_content or {}
        await t.call(
            "list_pending: the next page",
            external,
            LIST_PENDING,
            {"limit": 1, "cursor": structured["next_cursor"]},
        )
        await t.call(
            "list_pending: a bad cursor is a validation error",
            external,
            LIST_PENDING,
            {"cursor": "!!"},
        )
        await t.call(
            "list_pending: a bad created_since is a validation error",
            external,
            LIST_PENDING,
            {"created_since": "soon"},
        )
        await t.call("list_pending: not visible lists nothing (L1c)", stranger, LIST_PENDING, {})
        await t.call("list_tasks: after the asks", agent, LIST_TASKS, {})
        older = structured["bundles"][0]["pending_id"]
        await w.call(
            "turns: a newer turn", "POST", f"{API}/sessions/{session}/turns", json={}, headers=carol
        )
        await t.call(
            "answer: superseded is CONFLICT",
            external,
            ANSWER,
            {"pending_id": older, "rejected": True},
        )
        await w.call(
            "sessions: finish the session",
            "PATCH",
            f"{API}/sessions/{session}",
            json={"state": "COMPLETED"},
            headers=carol,
        )

    # #14: an agent token ends with its session, so a finished session's agent is refused at
    # the HTTP layer before any tool runs.
    await w.call(
        "in-session: the agent token of a finished session is 401",
        "POST",
        f"/mcp/session/{session}",
        json=initialize,
        headers={**mcp_headers, **bearer(agent_token)},
    )
    async with mcp_session(external_url, carol_token, mode="legacy") as legacy_external:
        legacy = tools_listing((await legacy_external.list_tools()).tools)
    assert legacy == catalogs["external"], "the legacy protocol lists the same external tools"

    # 3. /mcp/agent (#21): nothing to create first; the ask creates the agent's task session.
    await w.call(
        "agent: no token is 401", "POST", "/mcp/agent", json=initialize, headers=mcp_headers
    )
    async with (
        mcp_session(served.url("/mcp/agent"), carol_token) as on_agent,
        mcp_session(external_url, carol_token) as external,
    ):
        served.clock.advance()
        catalogs["agent"] = tools_listing((await on_agent.list_tools()).tools)
        agent_args: dict[str, Any] = {"questions": questions(1, topic="Agent"), "context": "c"}
        agent_result: list[CallToolResult] = []

        async def agent_ask() -> None:
            agent_result.append(await on_agent.call_tool(ASK, agent_args))

        async def one_pending() -> bool:
            response = await w.call("", "GET", f"{CLAR}/pending", headers=carol, record=False)
            return bool(response.json()["count"] == 1)

        async with anyio.create_task_group() as tasks:
            served.clock.advance()
            tasks.start_soon(agent_ask)
            await w.until(one_pending)
            listed = await t.call("agent: the question is listed", external, LIST_PENDING, {})
            assert listed.structured_content is not None
            [bundle] = listed.structured_content["bundles"]
            await t.call(
                "agent: answered from the external surface",
                external,
                ANSWER,
                {
                    "pending_id": bundle["pending_id"],
                    "answers": [{"question_id": "q1", "selected_options": ["q1_opt1"]}],
                },
            )
        transcript.add(
            "agent ask: the answered result", tool_entry(ASK, agent_args, agent_result[0])
        )
        await t.call("agent list_tasks: the task created for the agent", on_agent, LIST_TASKS, {})
    await approval_tools_scenario(served, w, t, carol_token, ws)
    return transcript, catalogs


REQUEST_APPROVAL = "request_approval_kandev"
DECIDE_APPROVAL = "decide_approval_kandev"


async def approval_tools_scenario(
    served: Served, w: Wire, t: Tools, token: str, workspace_id: str
) -> None:
    """#33: ``request_approval`` blocks on the in-session and agent surfaces until
    ``decide_approval`` (on ``/mcp/agent``, then ``/mcp``) decides; both tools' refusals."""
    carol = bearer(token)
    task = _created(
        await w.call(
            "approvals setup: task",
            "POST",
            f"{API}/tasks",
            json={"title": "Approvals", "workspace_id": workspace_id},
            headers=carol,
        )
    )
    created = await w.call(
        "approvals setup: session",
        "POST",
        f"{API}/tasks/{task}/sessions",
        json={"is_primary": True},
        headers=carol,
    )
    session_url = served.url(f"/mcp/session/{_created(created)}")

    async def one_pending() -> bool:
        response = await w.call("", "GET", f"{CLAR}/pending", headers=carol, record=False)
        return bool(response.json()["count"] == 1)

    async def pending_id() -> str:
        response = await w.call("", "GET", f"{CLAR}/pending", headers=carol, record=False)
        [bundle] = response.json()["bundles"]
        return str(bundle["pending_id"])

    async def requested(
        where: str,
        client: Client,
        arguments: dict[str, Any],
        decide: Callable[[str], Awaitable[None]],
    ) -> None:
        results: list[CallToolResult] = []

        async def request() -> None:
            results.append(await client.call_tool(REQUEST_APPROVAL, arguments))

        async with anyio.create_task_group() as tasks:
            served.clock.advance()
            tasks.start_soon(request)
            await w.until(one_pending)
            await decide(await pending_id())
        t.transcript.add(
            f"{REQUEST_APPROVAL} {where}: the decided result",
            tool_entry(REQUEST_APPROVAL, arguments, results[0]),
        )

    in_session_args = {
        "action": {"name": "shell", "arguments": {"command": "make clean"}},
        "reason": "Clean before the release build.",
    }
    agent_args = {"action": {"name": "deploy", "arguments": {"to": "production"}}}
    async with (
        mcp_session(session_url, created.json()["agent_token"]) as in_session,
        mcp_session(served.url("/mcp/agent"), token) as on_agent,
        mcp_session(served.url("/mcp"), token) as external,
    ):

        async def approve_on_agent(pending: str) -> None:
            decision = {"pending_id": pending, "decision": "approve", "comment": "go"}
            await t.call("decide on /mcp/agent: approve", on_agent, DECIDE_APPROVAL, decision)

        async def deny_on_external(pending: str) -> None:
            decision = {"pending_id": pending, "decision": "deny", "comment": "not today"}
            await t.call("decide on /mcp: deny", external, DECIDE_APPROVAL, decision)
            await t.call("decide on /mcp: a late vote is told", external, DECIDE_APPROVAL, decision)

        await requested("in-session", in_session, in_session_args, approve_on_agent)
        await requested("on /mcp/agent", on_agent, agent_args, deny_on_external)
        await t.call(
            "request_approval: arguments that are not an object is a validation error",
            on_agent,
            REQUEST_APPROVAL,
            {"action": {"name": "x", "arguments": [1]}},
        )
        await t.call(
            "decide_approval: an unknown decision is a validation error",
            external,
            DECIDE_APPROVAL,
            {"pending_id": "nope", "decision": "maybe"},
        )
        await t.call(
            "decide_approval: an unknown request is not found",
            on_agent,
            DECIDE_APPROVAL,
            {"pending_id": "nope", "decision": "approve"},
        )


# --- auth disabled: the synthetic caller ------------------------------------------------------


async def open_scenario(served: Served, http: httpx2.AsyncClient) -> tuple[Transcript, object]:
    transcript = Transcript("auth-disabled")
    w = Wire(served, http, transcript)
    openapi = await w.document("/openapi.json", "openapi-auth-{mode}.json")
    await w.call("me: the synthetic caller", "GET", f"{API}/auth/me")
    await w.call(
        "login: auth disabled", "POST", f"{API}/auth/login", json={"token": "clarion_pat_x"}
    )
    await w.call("workspaces: create, unowned", "POST", f"{API}/workspaces", json={"name": "Open"})
    await w.call("workspaces: list", "GET", f"{API}/workspaces")
    await w.call("pending: empty", "GET", f"{CLAR}/pending")
    return transcript, openapi


def assert_every_route_and_tool_is_exercised(
    openapi: object,
    rest: Transcript,
    mcp: Transcript,
    catalogs: dict[str, object],
    approvals: Transcript,
) -> None:
    """The scenario is complete: every operation of the OpenAPI document was called at least
    once, and every tool each surface lists (a new route or tool fails here until it is added)."""
    assert isinstance(openapi, dict)
    called = {
        str(entry["request"]).split("?")[0]
        for entry in [*rest.entries, *mcp.entries, *approvals.entries]
        if "request" in entry
    }
    for template, operations in openapi["paths"].items():
        pattern = re.compile(re.sub(r"\\{\w+\\}", "[^/]+", re.escape(template)) + "$")
        for method in operations:
            assert any(
                line.startswith(f"{method.upper()} ") and pattern.match(line.split(" ", 1)[1])
                for line in called
            ), f"{method.upper()} {template} is not exercised"
    tools = {
        (entry["tool"], entry["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"])
        for entry in mcp.entries
        if "tool" in entry
    }
    surfaces = (
        ("external", "clarion-external"),
        ("session", "clarion-session"),
        ("agent", "clarion-agent"),
    )
    for surface, server in surfaces:
        listed = catalogs[surface]
        assert isinstance(listed, list)
        for tool in listed:
            assert (tool["name"], server) in tools, f"{tool['name']} on {surface} is not called"


async def test_the_wire_format_matches_the_golden_files(tmp_path: Path) -> None:
    """R10, R12, L4a, R2, R2b, L1c, L6, L9, N6–N8, D4: every REST route and MCP tool, success
    and error bodies, byte for byte against ``tests/golden/wire`` (see the module docstring)."""
    produced: dict[str, object] = {}
    async with (
        serve(f"sqlite:///{tmp_path / 'enabled.db'}", auth_enabled=True) as served,
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
    ):
        rest, produced["openapi-auth-enabled"] = await rest_scenario(served, http)
        mcp, catalogs = await mcp_scenario(served, http)
        approvals = await approvals_scenario(served, http, produced["openapi-auth-enabled"], Wire)
    async with (
        serve(f"sqlite:///{tmp_path / 'disabled.db'}", auth_enabled=False) as served,
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
    ):
        open_, produced["openapi-auth-disabled"] = await open_scenario(served, http)
    assert_every_route_and_tool_is_exercised(
        produced["openapi-auth-enabled"], rest, mcp, catalogs, approvals
    )
    produced["rest"] = rest.entries
    produced["approvals"] = approvals.entries
    produced["mcp"] = mcp.entries
    produced["rest-auth-disabled"] = open_.entries
    produced["mcp-tools-external"] = catalogs["external"]
    produced["mcp-tools-session"] = catalogs["session"]
    produced["mcp-tools-agent"] = catalogs["agent"]
    check_golden(produced, GOLDEN_DIR)
