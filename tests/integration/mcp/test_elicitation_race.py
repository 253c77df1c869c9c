"""The agent's own client answering the form races a REST ``respond`` at the same moment.

Both answers reach the one resolver, so across many rounds exactly one claims, the loser is
told the winner's answer, and the asking agent's one call returns exactly that answer — on
SQLite and PostgreSQL, in both protocol eras. Each test prints how many rounds each side won.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.client.session import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from tests.integration.mcp.forms import form_client
from tests.integration.mcp.harness import (
    ASK,
    McpWorld,
    http_client,
    question_args,
    serving,
    structured,
    watching,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROUNDS = 20
ROUND_TIMEOUT_S = 30.0
REST_OPTION, FORM_OPTION = 1, 2
# The form's answer travels further (back to the client, and on 2026-07-28 a whole retry), so
# REST starts at staggered offsets to let either side win some rounds; nothing asserts who wins.
STAGGER_S = (0.0, 0.005, 0.01, 0.02, 0.03)


def _answers(option: int) -> list[dict[str, Any]]:
    return [
        {"question_id": f"q{i}", "selected_options": [f"q{i}_opt{option}"], "custom_text": ""}
        for i in (1, 2)
    ]


class _Form:
    """An elicitation callback that shows the form, then submits it when told to."""

    def __init__(self) -> None:
        self.shown = anyio.Event()
        self.go = anyio.Event()

    def reset(self) -> None:
        self.shown, self.go = anyio.Event(), anyio.Event()

    async def __call__(
        self, ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.shown.set()
        await self.go.wait()
        content: dict[str, str | int | float | bool | list[str] | None] = {
            f"q{i}_choice": [f"q{i}_opt{FORM_OPTION}"] for i in (1, 2)
        }
        return ElicitResult(action="accept", content=content)


async def _race(world: McpWorld, mode: str, label: str) -> None:
    alice = world.person("alice")
    agent = await world.agent(alice)
    form = _Form()
    wins = {"form": 0, "rest": 0}
    resumed_after_rest_win = 0
    async with (
        form_client(world.session_url(agent.session.id), form, token=agent.token, mode=mode) as c,
        http_client(alice.token) as http,
    ):
        for round_number in range(ROUNDS):
            form.reset()
            asked: list[dict[str, Any]] = []
            rest: dict[str, Any] = {}
            resumes_before = len(world.resumes)

            async def ask(number: int = round_number, into: list[Any] = asked) -> None:
                questions = question_args(2, prefix=f"Round {number}")
                into.append(structured(await c.call_tool(ASK, {"questions": questions})))

            with anyio.fail_after(ROUND_TIMEOUT_S):
                async with watching(world) as events:
                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(ask)
                        created = await events.wait_for(
                            "bundle.created", session_id=agent.session.id
                        )
                        await form.shown.wait()

                        async def by_rest(
                            pending_id: str = created.pending_id,
                            into: dict[str, Any] = rest,
                            stagger: float = STAGGER_S[round_number % len(STAGGER_S)],
                        ) -> None:
                            await form.go.wait()
                            await anyio.sleep(stagger)
                            body = {"answers": _answers(REST_OPTION)}
                            response = await http.post(world.respond_url(pending_id), json=body)
                            assert response.status_code == 200, response.text
                            into.update(response.json())

                        tasks.start_soon(by_rest)
                        form.go.set()
                    await events.wait_for("bundle.resolved", pending_id=created.pending_id)
                    resolved = [
                        e
                        for e in events.events
                        if e.kind == "bundle.resolved" and e.pending_id == created.pending_id
                    ]
                    assert len(resolved) == 1  # one claim, delivered once

            winner = REST_OPTION if rest["claimed"] else FORM_OPTION
            wins["rest" if rest["claimed"] else "form"] += 1
            # The loser (REST or the form) was told the winner's answer; REST shows it either way.
            assert rest["status"] == "answered"
            assert rest["response"]["answers"] == _answers(winner)
            [received] = asked  # the agent's one call returned once, with the winner's answer
            for number in (1, 2):
                assert received[f"q{number}"]["selected_options"] == [f"q{number}_opt{winner}"]
            resumed = world.resumes[resumes_before:]
            if mode == "legacy" or winner == FORM_OPTION:
                assert resumed == []  # the asking call was waiting: nothing to resume
            else:
                # 2026-07-28: REST may win before the retry waits again; that winner resumes
                # the agent through the dispatcher (once), and the retry returns the replay.
                assert len(resumed) <= 1
                resumed_after_rest_win += len(resumed)
    assert wins["form"] + wins["rest"] == ROUNDS
    print(  # the figures the issue asks for, shown with -s
        f"\nelicitation race {label} {mode}: {ROUNDS} rounds, form won {wins['form']}, "
        f"REST won {wins['rest']}, resumes after a REST win {resumed_after_rest_win}"
    )


async def test_a_form_answer_and_a_rest_answer_at_once_have_exactly_one_winner_on_sqlite(
    sqlite_url: str, mode: str
) -> None:
    async with serving(McpWorld.build(sqlite_url, progress_interval=0.05)) as world:
        await _race(world, mode, "sqlite")


async def test_a_form_answer_and_a_rest_answer_at_once_have_exactly_one_winner_on_postgresql(
    postgres_database_url: str, mode: str
) -> None:
    async with serving(McpWorld.build(postgres_database_url, progress_interval=0.05)) as world:
        await _race(world, mode, "postgresql")
