"""Issue #34 on MCP: the asking agent's answered result carries the signed receipt in
``_meta["clarion/receipt"]`` (the pinned result itself unchanged) — the blocking call's and a
task's (``tasks/get``) alike — and a detached answer's resume carries the same receipt; all
verify with the published keys."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from clarion.adapters.mcp.tools import RECEIPT_META_KEY
from clarion.adapters.receipts import Ed25519KeyRing, Ed25519Verifier
from clarion.domain.receipts import asked_digest, parse_receipt
from tests.integration.mcp.harness import (
    ANSWER,
    ASK,
    McpWorld,
    Person,
    answers_for,
    http_client,
    mcp_client,
    question_args,
    serving,
    structured,
    watching,
)
from tests.integration.mcp.rpc import call_ask, task_method

pytestmark = pytest.mark.anyio
SIGNER = Ed25519KeyRing.of([("mcp-1", bytes(range(3, 35)))])


@pytest.fixture(name="world")
async def fixture_world(tmp_path: Path) -> AsyncIterator[McpWorld]:
    world = McpWorld.build(
        f"sqlite:///{tmp_path / 'c.db'}", progress_interval=0.05, receipt_signer=SIGNER
    )
    async with serving(world) as served:
        yield served


def _verify(receipt: Any) -> Any:
    parsed = parse_receipt(receipt)
    Ed25519Verifier().verify(parsed, SIGNER.public_keys())
    return parsed.payload


async def test_the_blocked_agents_answer_carries_a_receipt_in_meta(
    world: McpWorld, alice: Person, mode: str
) -> None:
    agent = await world.agent(alice)
    outcome: dict[str, Any] = {}

    async def ask() -> None:
        async with mcp_client(
            world.session_url(agent.session.id), token=agent.token, mode=mode
        ) as client:
            outcome["result"] = await client.call_tool(
                ASK, {"questions": question_args(2), "context": "why"}
            )

    async with watching(world) as events, anyio.create_task_group() as tasks:
        tasks.start_soon(ask)
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
        await events.wait_for("session.updated", session_id=agent.session.id)
        async with mcp_client(world.external_url, token=alice.token, mode=mode) as external:
            answered = await external.call_tool(
                ANSWER, {"pending_id": created.pending_id, "answers": answers_for(2)}
            )
    assert structured(answered)["claimed"] is True
    result = outcome["result"]
    assert set(structured(result)) == {"q1", "q2", "rejected", "reject_reason"}  # unchanged
    assert result.meta is not None
    receipt = result.meta[RECEIPT_META_KEY]
    payload = _verify(receipt)
    bundle = await world.services.resolver.authorize_bundle(alice.identity, created.pending_id)
    assert payload["request_id"] == created.pending_id
    assert payload["asked_digest"] == asked_digest(bundle.questions, "why")
    assert payload["outcome"]["status"] == "answered"
    assert payload["resolved_by"]["surface"] == "mcp"
    # The same receipt over REST, made again from the stored claim.
    async with http_client(alice.token) as http:
        rest = await http.get(f"{world.base_url}/api/v1/clarification/{created.pending_id}/receipt")
        keys = await http.get(f"{world.base_url}/.well-known/clarion-receipt-keys")
    assert rest.json() == receipt
    assert keys.json()["keys"][0]["kid"] == "mcp-1"


async def test_a_detached_answer_resumes_the_agent_with_its_receipt(
    world: McpWorld, alice: Person
) -> None:
    agent = await world.agent(alice)
    pending_id = await world.bundle(alice, agent)
    async with http_client(alice.token) as http:
        response = await http.post(
            world.respond_url(pending_id), json={"answers": answers_for(1, option=2)}
        )
    assert response.status_code == 200, response.text
    [resume] = world.resumes
    assert resume.receipt is not None
    payload = _verify(dict(resume.receipt))
    assert payload["request_id"] == pending_id
    assert payload["outcome"]["answers"][0]["selected_options"] == ["q1_opt2"]


async def test_a_completed_tasks_result_carries_the_receipt_in_meta(
    world: McpWorld, alice: Person
) -> None:
    """A task-extension agent gets the same receipt in ``tasks/get``'s completed result as
    the blocking call would (its structured content unchanged), and none while it waits."""
    agent = await world.agent(alice)
    url = world.session_url(agent.session.id)
    async with http_client(agent.token) as http:
        created = await call_ask(http, url, ASK, {"questions": question_args(1)})
        pending_id = created["_meta"]["dev.clarion/pending-id"]
        working = await task_method(http, url, "tasks/get", created["taskId"])
    assert working["status"] == "working"
    assert "result" not in working
    async with http_client(alice.token) as http:
        response = await http.post(
            world.respond_url(pending_id), json={"answers": answers_for(1, option=2)}
        )
        rest = await http.get(f"{world.base_url}/api/v1/clarification/{pending_id}/receipt")
    assert response.status_code == 200, response.text
    async with http_client(agent.token) as http:
        done = await task_method(http, url, "tasks/get", created["taskId"])
    assert done["status"] == "completed"
    result = done["result"]
    assert set(result["structuredContent"]) == {"q1", "rejected", "reject_reason"}
    receipt = result["_meta"][RECEIPT_META_KEY]
    assert receipt == rest.json()
    payload = _verify(receipt)
    assert payload["request_id"] == pending_id
    assert payload["outcome"]["answers"][0]["selected_options"] == ["q1_opt2"]
