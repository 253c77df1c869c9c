"""Three Clarion processes on one PostgreSQL database (issue 9): an answer given on any
replica reaches the agent waiting on another in the same call, exactly once; releasing the
agent works across replicas; and a replica killed mid-wait loses nothing."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest
from anyio.abc import ObjectReceiveStream
from mcp.types import CallToolResult

from clarion.adapters.mcp.errors import ERROR_META_KEY
from tests.integration.multiprocess.clients import (
    AgentSession,
    Created,
    agent_session,
    answer_over_mcp,
    answer_over_rest,
    ask,
    choose,
    created_bundles,
    rest,
)
from tests.integration.multiprocess.cluster import Replica

pytestmark = pytest.mark.anyio

ROUNDS = 6
ROUND_S = 30.0


def _answer_of(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    answer = result.structured_content["q1"]
    assert isinstance(answer, dict)
    return answer


async def _resumes(replica: Replica, session_id: str) -> list[dict[str, Any]]:
    body = await rest(replica.base_url, "GET", f"/api/v1/sessions/{session_id}/resumes")
    resumes = body["resumes"]
    assert isinstance(resumes, list)
    return resumes


@attrs.define
class Round:
    """One bundle: what the agent on A received and what each answerer was told."""

    asked: list[CallToolResult] = attrs.field(factory=list)
    over_rest: dict[str, Any] = attrs.field(factory=dict)
    over_mcp: dict[str, Any] = attrs.field(factory=dict)


async def _race(
    replicas: list[Replica],
    session: AgentSession,
    created: ObjectReceiveStream[Created],
    label: str,
) -> Round:
    """The agent asks on A; once the bundle shows on B's event stream, B (REST) and C (MCP)
    answer it at the same time, with different answers."""
    a, b, c = replicas
    outcome = Round()

    async def agent() -> None:
        outcome.asked.append(await ask(a.base_url, session))

    async def answer_on_b(pending_id: str) -> None:
        outcome.over_rest.update(
            await answer_over_rest(b.base_url, pending_id, choose(1, text=f"B {label}"))
        )

    async def answer_on_c(pending_id: str) -> None:
        outcome.over_mcp.update(
            await answer_over_mcp(c.base_url, pending_id, choose(2, text=f"C {label}"))
        )

    with anyio.fail_after(ROUND_S):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(agent)
            pending_id = (await created.receive()).pending_id
            tasks.start_soon(answer_on_b, pending_id)
            tasks.start_soon(answer_on_c, pending_id)
    return outcome


async def test_answers_racing_on_two_replicas_reach_the_agent_waiting_on_a_third_once(
    replicas: list[Replica],
) -> None:
    """R1, R2, R3 across processes: one winner per bundle, the loser replays the winner's
    payload, and the agent on A gets the winner's answer in its ``ask`` call — never through
    the resume path."""
    session = await agent_session(replicas[0].base_url, "race")
    async with created_bundles(replicas[1].base_url) as created:
        for round_number in range(ROUNDS):
            outcome = await _race(replicas, session, created, str(round_number))
            claimed = [r for r in (outcome.over_rest, outcome.over_mcp) if r["claimed"]]
            assert len(claimed) == 1
            winner = claimed[0]
            loser = outcome.over_mcp if winner is outcome.over_rest else outcome.over_rest
            assert loser["claimed"] is False
            assert loser["response"] == winner["response"]
            received = _answer_of(outcome.asked[0])
            won = winner["response"]["answers"][0]
            assert received["selected_options"] == won["selected_options"]
            assert received["custom_text"] == won["custom_text"]
    assert await _resumes(replicas[2], session.session_id) == []


async def test_completing_the_turn_on_another_replica_releases_the_agent_and_an_answer_resumes_it(
    replicas: list[Replica],
) -> None:
    """Facts §4.2 across processes: the agent blocked on A is told its wait ended; the bundle
    stays answerable, and the answer goes to the resume dispatcher (R6, R7)."""
    a, b, c = replicas
    session = await agent_session(c.base_url, "released")
    asked: list[CallToolResult] = []
    async with created_bundles(b.base_url) as created:
        with anyio.fail_after(ROUND_S):
            async with anyio.create_task_group() as tasks:

                async def agent() -> None:
                    asked.append(await ask(a.base_url, session))

                tasks.start_soon(agent)
                pending_id = (await created.receive()).pending_id
                completed = await rest(
                    c.base_url,
                    "POST",
                    f"/api/v1/sessions/{session.session_id}/turns/current/complete",
                )
    assert completed == {"detached": 1}
    assert asked[0].is_error
    assert (asked[0].meta or {})[ERROR_META_KEY]["reason"] == "cancelled"
    answered = await answer_over_rest(b.base_url, pending_id, choose(2, text="later"))
    assert answered["claimed"] is True
    resumes = await _resumes(a, session.session_id)
    assert [resume["metadata"]["pending_id"] for resume in resumes] == [pending_id]


async def test_killing_the_replica_holding_a_waiter_leaves_the_bundle_answerable_once_elsewhere(
    replicas: list[Replica],
) -> None:
    """``kill -9`` mid-wait: the bundle stays listed (L2) and answerable on the other
    replicas; the answer goes to the resume dispatcher (R6); a second answer replays it."""
    a, b, c = replicas
    session = await agent_session(b.base_url, "killed")
    agent_failures: list[BaseException] = []
    async with created_bundles(b.base_url) as created:
        with anyio.fail_after(ROUND_S):
            async with anyio.create_task_group() as tasks:

                async def agent() -> None:
                    try:
                        await ask(a.base_url, session)
                    except Exception as exc:  # noqa: BLE001 - its replica died under it
                        agent_failures.append(exc)

                tasks.start_soon(agent)
                pending_id = (await created.receive()).pending_id
                await anyio.to_thread.run_sync(a.kill)
                tasks.cancel_scope.cancel()
    listed = await rest(c.base_url, "GET", "/api/v1/clarification/pending")
    assert pending_id in [bundle["pending_id"] for bundle in listed["bundles"]]
    with anyio.fail_after(ROUND_S):
        won = await answer_over_rest(b.base_url, pending_id, choose(2, text="after the crash"))
        again = await answer_over_mcp(c.base_url, pending_id, choose(1))
    assert won["claimed"] is True
    assert again["claimed"] is False
    assert again["response"] == won["response"]
    resumes = await _resumes(c, session.session_id)
    assert len(resumes) == 1
    assert resumes[0]["metadata"]["pending_id"] == pending_id
    assert resumes[0]["metadata"]["answers"] == [
        {"question_id": "q1", "selected_options": ["q1_opt2"], "custom_text": "after the crash"}
    ]
    listed = await rest(b.base_url, "GET", "/api/v1/clarification/pending")
    assert pending_id not in [bundle["pending_id"] for bundle in listed["bundles"]]
