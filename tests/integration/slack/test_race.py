"""The race (issue #18, R1/R2): a Slack click, MCP ``answer_question_kandev`` and REST respond
on the same bundle at once, 20 rounds on one served Clarion per database (SQLite, PostgreSQL).
Every round has exactly one winner, recorded with its surface; the losers get the winner's
answer; every Slack message of the bundle ends in the same final state naming that winner."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pytest
from mcp import Client

from clarion.domain.resolved_by import Surface
from tests.integration.mcp.harness import ANSWER, mcp_client, structured
from tests.integration.rest.harness import ok
from tests.integration.slack.support import SlackWorld, final_header, has_buttons, text_of

pytestmark = pytest.mark.anyio

ROUNDS = 20
HEAD_START_S = 0.03
CHOICE = {"slack": 1, "mcp": 2, "rest": 3}  # each racer picks its own option
SURFACE = {"slack": Surface.SLACK, "mcp": Surface.MCP, "rest": Surface.REST}
SHOWN = {"slack": "alice via Slack", "mcp": "bob via MCP", "rest": "carol via the REST API"}


def _answer(racer: str) -> dict[str, Any]:
    return {"question_id": "q1", "selected_options": [f"q1_opt{CHOICE[racer]}"]}


async def _round(world: SlackWorld, external: Client, round_number: int) -> str:
    """One round; returns the winner's name."""
    pending_id = await world.ask(options=3)
    messages = await world.posted(pending_id, 2)
    channel = next(m for m in messages if m.channel == "CCLARION")
    click, reply_name = world.click_payload("UALICE", channel, "clarion_option_0")
    signed = world.signed(click)
    claimed: dict[str, bool] = {}
    replies: dict[str, Any] = {}

    async def slack() -> None:
        assert (await world.send(*signed)).status_code == 200
        text = await world.reply(reply_name)
        claimed["slack"] = text.startswith("Answered.")
        replies["slack"] = text

    async def mcp() -> None:
        arguments = {"pending_id": pending_id, "answers": [_answer("mcp")]}
        result = structured(await external.call_tool(ANSWER, arguments))
        claimed["mcp"] = result["claimed"]

    async def rest() -> None:
        response = await world.http.post(
            f"/api/v1/clarification/{pending_id}/respond",
            json={"answers": [_answer("rest")]},
            headers=world.people["carol"].headers,
        )
        body = ok(response)
        claimed["rest"] = body["claimed"]
        replies["rest"] = body

    # Three of every four rounds give one racer (in turn) a head start of a few milliseconds,
    # so each surface wins some rounds (the Slack click claims after its ack, so it would
    # rarely win otherwise); every fourth round starts all three at once.
    racers: tuple[Callable[[], Coroutine[Any, Any, None]], ...] = (slack, mcp, rest)
    favourite = racers[round_number % 3] if round_number % 4 != 3 else None

    async def late(racer: Callable[[], Coroutine[Any, Any, None]]) -> None:
        await anyio.sleep(HEAD_START_S)
        await racer()

    async with anyio.create_task_group() as tasks:
        for racer in racers:
            if favourite is None or racer is favourite:
                tasks.start_soon(racer)
            else:
                tasks.start_soon(late, racer)

    won = [name for name, did in claimed.items() if did]
    assert len(won) == 1, claimed
    (winner,) = won
    resolved_by = world.resolved_by(pending_id)
    assert resolved_by is not None
    assert resolved_by.surface == SURFACE[winner]
    chosen = [f"q1_opt{CHOICE[winner]}"]
    assert replies["rest"]["response"]["answers"][0]["selected_options"] == chosen  # R2
    if winner != "slack":
        assert replies["slack"].startswith(f"Already answered by {SHOWN[winner]}")
    await world.fake.wait_for(
        lambda: all(m.updates for m in world.messages_of(pending_id)), "every message updated"
    )
    finals = world.messages_of(pending_id)
    assert len(finals) == 2
    assert finals[0].blocks == finals[1].blocks
    for message in finals:
        assert final_header(message) == "Answered"
        assert not has_buttons(message)
        assert SHOWN[winner] in text_of(message)
        assert f"Choice {CHOICE[winner]}" in text_of(message)
    return winner


async def test_slack_mcp_and_rest_race_for_one_bundle_and_exactly_one_wins(
    world: SlackWorld, database_url: str
) -> None:
    winners: Counter[str] = Counter()
    bob_token = world.people["bob"].headers["Authorization"].removeprefix("Bearer ")
    async with mcp_client(f"{world.url}/mcp", token=bob_token) as external:
        for round_number in range(ROUNDS):
            winners[await _round(world, external, round_number)] += 1
    assert sum(winners.values()) == ROUNDS
    backend = database_url.partition(":")[0].partition("+")[0]
    summary = ", ".join(f"{surface} {winners[surface]}" for surface in ("slack", "mcp", "rest"))
    print(f"\nslack race on {backend}: {ROUNDS} rounds, one winner each; winners: {summary}")
