"""``clarion demo``: the whole story in one process, on a temporary SQLite database.

An agent asks two questions over its in-session MCP endpoint and blocks; a notification route
tells a local webhook receiver (signed, docs/notifications.md); an external MCP client lists the
questions and answers; the agent receives the answer in the same call; the receiver hears it was
resolved; a second answerer gets the winner's replay; a bundle whose agent moved on is answered
into the resume outbox.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from clarion.app.root.compose import build_clarion
from clarion.app.root.logging_setup import configure_logging
from clarion.app.root.settings import Settings
from clarion.domain.model import Identity
from clarion.domain.signing import verify

DEMO_SECRET = "demo-webhook-secret"

QUESTIONS = [
    {
        "id": "db",
        "title": "Database",
        "prompt": "Which database should the new service use?",
        "options": [
            {"label": "SQLite", "description": "Embedded, zero setup"},
            {"label": "PostgreSQL", "description": "A server; scales to several replicas"},
        ],
    },
    {
        "id": "envs",
        "title": "Deploy",
        "prompt": "Where should it be deployed first?",
        "options": [
            {"label": "Staging", "description": "The shared staging cluster"},
            {"label": "Production", "description": "Straight to production"},
            {"label": "Laptop", "description": "Only locally for now"},
        ],
    },
]


class DemoFailed(Exception):
    """A step of the demo did not behave as Clarion promises."""


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the demo's process keeps its own signal handling


def _say(step: str, detail: Any = None) -> None:
    print(f"\n== {step}")
    if detail is not None:
        print(
            detail if isinstance(detail, str) else json.dumps(detail, indent=2, ensure_ascii=False)
        )


def _structured(result: Any) -> dict[str, Any]:
    if result.is_error:
        raise DemoFailed(result.content[0].text)
    data: dict[str, Any] = result.structured_content
    return data


@contextlib.asynccontextmanager
async def _serving(app: Any, sock: socket.socket) -> AsyncIterator[str]:
    port = sock.getsockname()[1]
    server = _Uvicorn(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on"))
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.serve, [sock])
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
    finally:
        sock.close()


class _Receiver:
    """A local webhook receiver standing in for a team's chat bot: it keeps every signed
    notification Clarion POSTs to it."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.arrived = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                stamp = self.headers.get("Clarion-Timestamp", "")
                signature = self.headers.get("Clarion-Signature", "")
                signed = verify(DEMO_SECRET, stamp, body, signature)
                self.send_response(200 if signed else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()
                if signed:
                    receiver.events.append(json.loads(body))
                    receiver.arrived.set()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hooks/team"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> _Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    async def wait_for(self, event: str, pending_id: str) -> dict[str, Any]:
        with anyio.fail_after(30):
            while True:
                for body in self.events:
                    if body["event"] == event and body["bundle"]["pending_id"] == pending_id:
                        return body
                self.arrived.clear()
                await anyio.to_thread.run_sync(self.arrived.wait, 0.5)


def _client() -> httpx2.AsyncClient:
    return httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300))


async def _story(base: str, receiver: _Receiver, link_for: Callable[[str], str]) -> None:
    """``link_for(pending_id)`` is the signed answer link an e-mail to a routed recipient
    carries (the demo runs no SMTP server, so it asks for the link directly)."""
    async with _client() as http:
        session_id = await _set_up(http, base, receiver)
        agent_got: dict[str, Any] = {}
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_agent_asks, base, session_id, agent_got)
            _say("The agent asks two questions and blocks in ask_user_question_kandev")
            pending_id = await _answer_from_outside(base, receiver)
        await _check_the_agent_heard(receiver, pending_id, agent_got)
        await _answer_too_late(http, base, pending_id)
        await _answer_through_a_link(http, base, session_id, link_for)
        await _show_the_records(http, base)


async def _set_up(http: httpx2.AsyncClient, base: str, receiver: _Receiver) -> str:
    """A workspace whose questions a route sends to ``receiver``, a task and an agent
    session in it; returns the session's id."""
    workspace = (await http.post(f"{base}/api/v1/workspaces", json={"name": "Demo"})).json()
    route = await http.post(
        f"{base}/api/v1/notifications/routes",
        json={
            "channel": f"webhook:{receiver.url}",
            "workspace_id": workspace["id"],
            "events": ["answerable", "resolved"],
        },
    )
    if route.status_code != 201:
        raise DemoFailed(f"adding the notification route failed: {route.text}")
    _say("A notification route sends the workspace's questions to a local webhook")
    task = (
        await http.post(
            f"{base}/api/v1/tasks",
            json={"title": "Build the billing service", "workspace_id": workspace["id"]},
        )
    ).json()
    session = (
        await http.post(f"{base}/api/v1/tasks/{task['id']}/sessions", json={"is_primary": True})
    ).json()
    _say("A workspace, a task and an agent session exist", {"session_id": session["id"]})
    session_id: str = session["id"]
    return session_id


async def _agent_asks(base: str, session_id: str, agent_got: dict[str, Any]) -> None:
    """The agent's blocking ask over its in-session MCP endpoint; the answers land in
    ``agent_got``."""
    async with (
        _client() as agent_http,
        Client(
            streamable_http_client(f"{base}/mcp/session/{session_id}", http_client=agent_http)
        ) as mcp,
    ):
        result = await mcp.call_tool(
            "ask_user_question_kandev",
            {"questions": QUESTIONS, "context": "Starting the billing service."},
        )
        agent_got.update(_structured(result))


async def _answer_from_outside(base: str, receiver: _Receiver) -> str:
    """An external MCP client finds the agent's bundle (the receiver is told of it) and
    answers it; returns the bundle's pending id."""
    async with (
        _client() as external_http,
        Client(streamable_http_client(f"{base}/mcp", http_client=external_http)) as mcp,
    ):
        bundles: list[dict[str, Any]] = []
        with anyio.fail_after(30):
            while not bundles:
                listed = _structured(await mcp.call_tool("list_pending_questions_kandev", {}))
                bundles = listed["bundles"]
                if not bundles:
                    await anyio.sleep(0.05)  # poll, as an external caller would
        bundle = bundles[0]
        told = await receiver.wait_for("answerable", bundle["pending_id"])
        _say(
            "The webhook receiver is told, with a valid signature",
            {
                "event": told["event"],
                "link": told["link"],
                "questions": [q["prompt"] for q in told["bundle"]["questions"]],
            },
        )
        _say(
            "An external MCP client lists the pending bundle",
            {
                "pending_id": bundle["pending_id"],
                "questions": [q["prompt"] for q in bundle["questions"]],
            },
        )
        answer = {
            "pending_id": bundle["pending_id"],
            "answers": [
                {"question_id": "envs", "selected_options": ["q2_opt1", "q2_opt3"]},
                {
                    "question_id": "db",
                    "selected_options": ["q1_opt2"],
                    "custom_text": " with a read replica ",
                },
            ],
        }
        won = _structured(await mcp.call_tool("answer_question_kandev", answer))
        _say("It answers (in any order; Clarion normalizes) and wins the claim", won)
        if not won["claimed"]:
            raise DemoFailed("the first answer did not claim the bundle")
        pending_id: str = bundle["pending_id"]
        return pending_id


async def _check_the_agent_heard(
    receiver: _Receiver, pending_id: str, agent_got: dict[str, Any]
) -> None:
    """The agent's call returned the answer, and the receiver hears the bundle resolved."""
    _say("The agent's blocked call returned with every selected option", agent_got)
    if agent_got.get("envs", {}).get("selected_options") != ["q2_opt1", "q2_opt3"]:
        raise DemoFailed("the agent did not receive both selected options")
    resolved = await receiver.wait_for("resolved", pending_id)
    _say(
        "The receiver hears it was answered (answer text only where a route opts in)",
        {"event": resolved["event"], "status": resolved["bundle"]["status"]},
    )


async def _answer_too_late(http: httpx2.AsyncClient, base: str, pending_id: str) -> None:
    """A second answerer over REST gets the winner's replay (R2b), not an error."""
    late = await http.post(
        f"{base}/api/v1/clarification/{pending_id}/respond",
        json={"rejected": True, "reject_reason": "too late"},
    )
    _say("A second answerer over REST gets the winner's answer, not an error", late.json())
    if late.status_code != 200 or late.json()["claimed"] is not False:
        raise DemoFailed("the second answerer was not given the winner's replay")


async def _answer_through_a_link(
    http: httpx2.AsyncClient, base: str, session_id: str, link_for: Callable[[str], str]
) -> None:
    """A bundle whose agent's turn ended is answered through an e-mail's signed link, which
    resumes the agent through the durable outbox."""
    created = await http.post(
        f"{base}/api/v1/clarification/request",
        json={"session_id": session_id, "questions": QUESTIONS[:1]},
    )
    pending_id = created.json()["pending_id"]
    await http.post(f"{base}/api/v1/sessions/{session_id}/turns/current/complete")
    _say("Another question is asked, then the agent's turn ends (the bundle detaches)")
    link = link_for(pending_id)
    page = await http.get(link)
    if page.status_code != 200 or "<form" not in page.text:
        raise DemoFailed(f"the answer link's page did not show the form: {page.status_code}")
    _say(
        "An e-mail's signed answer link opens a page with the question (GET answers nothing)",
        {"link": link},
    )
    answered = await http.post(
        link,
        data={"action": "answer", "q0-options": ["q1_opt1"], "q0-text": ""},
        headers={"Origin": base},
    )
    if answered.status_code != 200:
        raise DemoFailed(f"answering through the link failed: {answered.text}")
    resumes = (await http.get(f"{base}/api/v1/sessions/{session_id}/resumes")).json()
    _say("Answering it there resumes the agent through the durable outbox", resumes)


async def _show_the_records(http: httpx2.AsyncClient, base: str) -> None:
    """The resolved list and the Prometheus metrics record what happened."""
    history = (await http.get(f"{base}/api/v1/clarification/resolved")).json()
    _say(
        "The resolved list records who answered, on which surface",
        [
            {"pending_id": b["pending_id"], "surface": b["resolved_by"]["surface"]}
            for b in history["bundles"]
        ],
    )
    scrape = (await http.get(f"{base}/metrics")).text
    _say(
        "GET /metrics (Prometheus) counts them",
        [
            line
            for line in scrape.splitlines()
            if line.startswith(
                (
                    "clarion_bundles_resolved_total",
                    "clarion_claims_lost_total",
                    "clarion_notification_deliveries_total",
                    "clarion_pending_bundles",
                    'clarion_mcp_tool_call_duration_seconds_count{tool="answer_question',
                )
            )
        ],
    )


async def _main() -> None:
    with tempfile.TemporaryDirectory(prefix="clarion-demo-") as folder:
        database = Path(folder) / "demo.db"
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        settings = Settings(
            public_url=f"http://127.0.0.1:{sock.getsockname()[1]}",
            database_url=f"sqlite:///{database}",
            auth_enabled=False,
            log_format="console",
            notify_webhook_secret=DEMO_SECRET,
            notify_poll_s=0.1,
            # The demo's receiver is on loopback, an internal address no route may reach
            # unless the operator allows it (CLARION_OUTBOUND_ALLOW, issue #29).
            outbound_allow="127.0.0.1,::1,localhost",
        )
        clarion = build_clarion(settings)
        try:
            with _Receiver() as receiver:
                async with _serving(clarion.asgi_app, sock) as base:
                    _say(f"Clarion is serving {base} on {database}")
                    await _story(
                        base,
                        receiver,
                        lambda pending_id: clarion.answer_links.link_for(
                            Identity.synthetic_admin(), pending_id
                        ),
                    )
        finally:
            clarion.close()
            sock.close()
    _say("Demo finished: every step behaved as promised.")


def run_demo(*, quiet_logs: bool = True) -> int:
    """Run the demo; 0 when every step behaved as promised."""
    if quiet_logs:
        configure_logging("console", level=logging.WARNING)
    try:
        anyio.run(_main)
    except DemoFailed as exc:
        print(f"clarion demo: FAILED: {exc}")
        return 1
    return 0
