"""The examples under ``docs/examples`` are real programs: this module imports and runs them.

``embed_in_starlette.py`` is driven through the host's own ASGI application (no socket): the
host asks through Clarion's app layer, people answer over REST and MCP at the mounted prefix,
and the host's authorizer, resume queue and event publisher are seen doing their jobs.
``test_host_repository_contract.py`` is a host's contract test module; its classes are
collected here so the suite runs them.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import anyio.abc
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from clarion.app.root.compose import Clarion
from clarion.domain import OptionDraft, QuestionDraft

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
BASE_URL = "http://127.0.0.1:8000"  # a loopback Host header passes the MCP Host check


def load_example(name: str) -> ModuleType:
    """Import ``docs/examples/<name>.py`` by path (the folder is not a package)."""
    module_name = f"clarion_docs_example_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


embed = load_example("embed_in_starlette")
contract_example = load_example("test_host_repository_contract")

# The host's contract test module, collected and run as part of this suite.
TestExampleAuditedClaimRepository = contract_example.TestAuditedClaimRepository
TestExampleHostRepositoryBesideIt = contract_example.TestHostRepositoryBesideIt
test_example_audit_records_each_winning_claim_once = (
    contract_example.test_the_audit_records_each_winning_claim_once_and_no_lost_one
)

QUESTIONS = (
    QuestionDraft(
        id="db",
        prompt="Which database should the new service use?",
        options=(
            OptionDraft(label="SQLite", description="Embedded, nothing to run"),
            OptionDraft(label="PostgreSQL", description="A server we already operate"),
        ),
    ),
)


def answer(option: str, text: str = "") -> dict[str, Any]:
    return {"answers": [{"question_id": "db", "selected_options": [option], "custom_text": text}]}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def serving(host: Any) -> AsyncIterator[httpx2.AsyncClient]:
    """Run the host's lifespan (which runs Clarion's) and talk to it in process."""
    app: Starlette = host.app
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL) as http,
    ):
        yield http


@asynccontextmanager
async def mcp_client(host: Any, path: str, token: str) -> AsyncIterator[Client]:
    """The SDK's MCP client on ``path`` of the host application, with a bearer token."""
    async with (
        httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=host.app),
            headers=bearer(token),
            timeout=httpx2.Timeout(30, read=300),
        ) as http,
        Client(streamable_http_client(f"{BASE_URL}{path}", http_client=http)) as client,
    ):
        yield client


async def watch_for_a_new_bundle(
    host: Any,
    pending: list[str],
    ready: anyio.Event,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Subscribe to the host's event publisher, then record the first new bundle's id."""
    subscription = host.events.subscribe()
    task_status.started()
    async with subscription:
        async for event in subscription:
            if event.kind == "bundle.created":
                pending.append(event.pending_id)
                ready.set()
                return


def test_importing_the_examples_builds_nothing() -> None:
    """Examples are importable: no application, service or engine exists at module level."""
    for module in (embed, contract_example):
        built = [
            name
            for name, value in vars(module).items()
            if isinstance(value, Starlette | Clarion | embed.HostService)
        ]
        assert built == []


@pytest.mark.anyio
async def test_the_host_keeps_its_own_routes_and_serves_clarion_under_its_prefix() -> None:
    host = embed.create_host()
    async with serving(host) as http:
        home = await http.get("/")
        health = await http.get(f"{embed.PREFIX}/healthz")
        unknown = await http.get(f"{embed.PREFIX}/no-such-route")
    assert home.json() == {"service": "host", "clarion": embed.PREFIX}
    assert health.json() == {"status": "ok", "database": "ok"}
    assert (unknown.status_code, unknown.json()) == (404, {"error": "not found"})


@pytest.mark.anyio
async def test_an_anonymous_request_under_the_prefix_gets_401_not_a_server_error() -> None:
    """Authentication rules match the path below the mount (``root_path`` removed)."""
    host = embed.create_host()
    async with serving(host) as http:
        anonymous = await http.get(f"{embed.PREFIX}/api/v1/workspaces")
    assert anonymous.status_code == 401
    assert anonymous.json() == {"error": "authentication required"}
    assert anonymous.headers["www-authenticate"] == "Bearer"


@pytest.mark.anyio
async def test_a_question_the_host_asks_is_answered_over_rest_and_resumes_through_the_host() -> (
    None
):
    """The host's authorizer decides who sees the bundle (L1c, A3); the winner's answer goes to
    the host's resume queue (R7); a second answer replays the first (R2)."""
    host = embed.create_host()
    async with serving(host) as http:
        alice = host.add_person("alice", "red")
        bob = host.add_person("bob", "blue")
        agent = await host.start_agent("red", "Pick a database")
        pending_id = await host.ask_later(agent.session_id, QUESTIONS, "A few thousand rows.")
        clarification = f"{embed.PREFIX}/api/v1/clarification"

        bobs_list = await http.get(f"{clarification}/pending", headers=bearer(bob.token))
        bobs_answer = await http.post(
            f"{clarification}/{pending_id}/respond",
            json=answer("q1_opt1"),
            headers=bearer(bob.token),
        )
        fabricated = await http.post(
            f"{clarification}/no-such-bundle/respond",
            json=answer("q1_opt1"),
            headers=bearer(bob.token),
        )
        alices_list = await http.get(f"{clarification}/pending", headers=bearer(alice.token))
        won = await http.post(
            f"{clarification}/{pending_id}/respond",
            json=answer("q1_opt2", "We run it already."),
            headers=bearer(alice.token),
        )
        replayed = await http.post(
            f"{clarification}/{pending_id}/respond",
            json=answer("q1_opt1"),
            headers=bearer(alice.token),
        )

    assert bobs_list.json()["count"] == 0
    assert bobs_answer.status_code == 404
    assert (bobs_answer.status_code, bobs_answer.content) == (
        fabricated.status_code,
        fabricated.content,
    )
    assert [bundle["pending_id"] for bundle in alices_list.json()["bundles"]] == [pending_id]
    assert won.status_code == 200
    assert won.json()["claimed"] is True
    assert replayed.status_code == 200
    assert replayed.json()["claimed"] is False
    assert replayed.json()["response"] == won.json()["response"]

    [resume] = host.resumes.accepted
    assert (resume.pending_id, resume.task_id, resume.session_id) == (
        pending_id,
        agent.task_id,
        agent.session_id,
    )
    assert [(a.selected_options, a.custom_text) for a in resume.answers] == [
        (("q1_opt2",), "We run it already.")
    ]
    asked = {user for user, task_id in host.authorizer.checks if task_id == agent.task_id}
    assert {alice.user_id, bob.user_id} <= asked
    assert ("bundle.created", pending_id) in host.events.audit
    assert ("bundle.resolved", pending_id) in host.events.audit


@pytest.mark.anyio
async def test_an_agent_asking_on_its_mounted_mcp_endpoint_gets_the_answer_given_over_rest() -> (
    None
):
    """Scenario 1 under a prefix: the in-session surface at ``/clarion/mcp/session/<id>`` with
    the agent token; the live agent receives the answer, so nothing is resumed (R7)."""
    host = embed.create_host()
    async with serving(host) as http:
        alice = host.add_person("alice", "red")
        agent = await host.start_agent("red", "Pick a database")
        pending: list[str] = []
        results: list[Any] = []

        async def ask() -> None:
            path = f"{embed.PREFIX}/mcp/session/{agent.session_id}"
            async with mcp_client(host, path, agent.agent_token) as client:
                result = await client.call_tool(
                    "ask_user_question_kandev",
                    {
                        "questions": [
                            {
                                "id": "db",
                                "prompt": "Which database?",
                                "options": [
                                    {"label": "SQLite", "description": "embedded"},
                                    {"label": "PostgreSQL", "description": "a server"},
                                ],
                            }
                        ]
                    },
                )
                results.append(result)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tasks:
                ready = anyio.Event()
                await tasks.start(watch_for_a_new_bundle, host, pending, ready)
                tasks.start_soon(ask)
                await ready.wait()
                response = await http.post(
                    f"{embed.PREFIX}/api/v1/clarification/{pending[0]}/respond",
                    json=answer("q1_opt1"),
                    headers=bearer(alice.token),
                )

    assert response.status_code == 200
    assert response.json()["claimed"] is True
    [result] = results
    assert result.is_error is False
    assert result.structured_content["db"]["selected_options"] == ["q1_opt1"]
    assert host.resumes.accepted == []


@pytest.mark.anyio
async def test_a_host_agent_waiting_in_process_gets_the_answer_given_over_external_mcp() -> None:
    """The host's blocking ask (the app layer) and an answer through ``/clarion/mcp`` with a
    personal access token; the external surface applies the host's authorizer too."""
    host = embed.create_host()
    async with serving(host):
        alice = host.add_person("alice", "red")
        agent = await host.start_agent("red", "Pick a database")
        pending: list[str] = []
        results: list[Any] = []

        async def ask() -> None:
            results.append(await host.ask_and_wait(agent.session_id, QUESTIONS))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tasks:
                ready = anyio.Event()
                await tasks.start(watch_for_a_new_bundle, host, pending, ready)
                tasks.start_soon(ask)
                await ready.wait()
                async with mcp_client(host, f"{embed.PREFIX}/mcp", alice.token) as client:
                    listed = await client.call_tool("list_pending_questions_kandev", {})
                    answered = await client.call_tool(
                        "answer_question_kandev",
                        {
                            "pending_id": pending[0],
                            "answers": [{"question_id": "db", "selected_options": ["q1_opt2"]}],
                        },
                    )

    assert [b["pending_id"] for b in listed.structured_content["bundles"]] == pending
    assert answered.structured_content is not None
    assert answered.structured_content["claimed"] is True
    [result] = results
    assert result.answers["db"].selected_options == ("q1_opt2",)
    assert host.resumes.accepted == []


@pytest.mark.anyio
async def test_a_resume_the_host_refuses_rolls_the_claim_back_and_the_bundle_stays_answerable() -> (
    None
):
    """R7: the host's dispatcher raising is a refusal; the answer is not lost, it can be given
    again once the host accepts resumes for that session."""
    host = embed.create_host()
    async with serving(host) as http:
        alice = host.add_person("alice", "red")
        agent = await host.start_agent("red", "Pick a database")
        pending_id = await host.ask_later(agent.session_id, QUESTIONS)
        respond = f"{embed.PREFIX}/api/v1/clarification/{pending_id}/respond"

        host.resumes.paused.add(agent.session_id)
        refused = await http.post(respond, json=answer("q1_opt1"), headers=bearer(alice.token))
        still_listed = await http.get(
            f"{embed.PREFIX}/api/v1/clarification/pending", headers=bearer(alice.token)
        )
        host.resumes.paused.clear()
        accepted = await http.post(respond, json=answer("q1_opt2"), headers=bearer(alice.token))

    assert refused.status_code == 500
    assert [b["pending_id"] for b in still_listed.json()["bundles"]] == [pending_id]
    assert accepted.status_code == 200
    assert accepted.json()["claimed"] is True
    [resume] = host.resumes.accepted
    assert resume.answers[0].selected_options == ("q1_opt2",)
    assert ("bundle.restored", pending_id) in host.events.audit
