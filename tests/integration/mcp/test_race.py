"""R3: a REST ``respond`` and an MCP ``answer_question_kandev`` race on one bundle.

Both entry points reach the one resolver and the one claim (P1), so across many rounds exactly
one side claims, the other is told the winner's answer (R2, N4), and the blocked agent receives
exactly that answer, once — on SQLite and on PostgreSQL, in both protocol eras. The claim
records who resolved (issue #20): always the winner's surface, never the loser's.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client

from clarion.domain.model import Identity
from clarion.domain.resolved_by import IdentityKind, Surface
from tests.integration.mcp.harness import (
    ANSWER,
    ASK,
    McpWorld,
    http_client,
    mcp_client,
    question_args,
    serving,
    structured,
    watching,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SQLITE_ROUNDS = 20
POSTGRES_ROUNDS = 20


def _answers(option: int) -> list[dict[str, Any]]:
    return [
        {"question_id": f"q{i}", "selected_options": [f"q{i}_opt{option}"], "custom_text": ""}
        for i in (1, 2)
    ]


async def _one_round(
    world: McpWorld,
    round_number: int,
    agent_client: Client,
    external: Client,
    session_id: str,
    token: str,
    user_id: str,
) -> None:
    asked: list[dict[str, Any]] = []
    rest_body: dict[str, Any] = {}
    mcp_body: dict[str, Any] = {}
    go = anyio.Event()

    async def ask() -> None:
        questions = question_args(2, prefix=f"Round {round_number}")
        asked.append(structured(await agent_client.call_tool(ASK, {"questions": questions})))

    async with watching(world) as events, anyio.create_task_group() as tasks:
        tasks.start_soon(ask)
        created = await events.wait_for("bundle.created", session_id=session_id)
        pending_id = created.pending_id

        async def by_rest() -> None:
            async with http_client(token) as http:
                await go.wait()
                response = await http.post(
                    world.respond_url(pending_id), json={"answers": _answers(1)}
                )
            assert response.status_code == 200, response.text
            rest_body.update(response.json())

        async def by_mcp() -> None:
            await go.wait()
            arguments = {"pending_id": pending_id, "answers": _answers(2)}
            mcp_body.update(structured(await external.call_tool(ANSWER, arguments)))

        tasks.start_soon(by_rest)
        tasks.start_soon(by_mcp)
        go.set()

    assert rest_body.pop("success") is True
    claims = sorted([rest_body["claimed"], mcp_body["claimed"]])
    assert claims == [False, True], (rest_body, mcp_body)
    winner, loser = (rest_body, mcp_body) if rest_body["claimed"] else (mcp_body, rest_body)
    submitted = 1 if winner is rest_body else 2
    assert loser["status"] == winner["status"] == "answered"
    assert loser["response"] == winner["response"]  # R2b: byte-identical replay, same time
    assert winner["response"]["answers"] == _answers(submitted)
    [received] = asked  # the agent's one call returned exactly once ...
    for number in (1, 2):  # ... with the winner's answer
        assert received[f"q{number}"]["selected_options"] == [f"q{number}_opt{submitted}"]
    assert world.resumes == []  # a live waiter took it: no resume, and never one for the loser
    bundle = await world.services.resolver.authorize_bundle(Identity.internal(), pending_id)
    recorded = {row.resolved_by for row in bundle.rows}
    expected_surface = Surface.REST if winner is rest_body else Surface.MCP
    assert len(recorded) == 1, recorded
    [resolved_by] = recorded
    assert resolved_by is not None
    assert (resolved_by.surface, resolved_by.identity_id) == (expected_surface, user_id)
    assert resolved_by.kind is IdentityKind.USER


async def _race(world: McpWorld, rounds: int, mode: str) -> None:
    alice = world.person("alice")
    agent = await world.agent(alice)
    async with (
        mcp_client(world.session_url(agent.session.id), token=agent.token, mode=mode) as asker,
        mcp_client(world.external_url, token=alice.token, mode=mode) as external,
    ):
        for round_number in range(rounds):
            await _one_round(
                world,
                round_number,
                asker,
                external,
                agent.session.id,
                alice.token,
                alice.identity.user_id or "",
            )


async def test_r3_rest_and_mcp_answers_race_and_exactly_one_claims_on_sqlite(
    sqlite_url: str, mode: str
) -> None:
    async with serving(McpWorld.build(sqlite_url)) as world:
        await _race(world, SQLITE_ROUNDS, mode)


async def test_r3_rest_and_mcp_answers_race_and_exactly_one_claims_on_postgresql(
    postgres_database_url: str, mode: str
) -> None:
    async with serving(McpWorld.build(postgres_database_url)) as world:
        await _race(world, POSTGRES_ROUNDS, mode)
