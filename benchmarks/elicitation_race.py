"""Race figures for issue #31: from a person's answer to the asking agent's result, per surface.

An agent asks on ``/mcp/agent`` with the SDK's client (both protocol eras, a real server on
SQLite); the answer comes from

- **form** — the agent's own client submits the form (2025-11-25: the reply to the
  ``elicitation/create`` request; 2026-07-28: the client's retry of the ``input_required``
  round);
- **rest** — ``POST /api/v1/clarification/{id}/respond`` while a client without elicitation
  waits on the plain blocking call;
- **url** — the answer page a URL-mode elicitation links to, posted by a browser signed in as
  the asker.

The clock starts when the answer leaves (the form callback returns, the REST or page POST is
sent) and stops when the agent's ``tools/call`` returns. Figures only, no assertion::

    .venv/bin/python -m benchmarks.elicitation_race              # 10 rounds per cell
    .venv/bin/python -m benchmarks.elicitation_race --rounds 30
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import structlog
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitRequestParams, ElicitRequestURLParams, ElicitResult

from clarion.adapters.mcp.elicitation import Setting
from tests.integration.mcp.harness import (
    ASK,
    McpWorld,
    Person,
    answers_for,
    http_client,
    question_args,
    serving,
    watching,
)

ERAS = {"2026-07-28": "auto", "2025-11-25": "legacy"}
Round = Callable[[McpWorld, Person, str, int], Awaitable[float]]


def _form_answer() -> ElicitResult:
    return ElicitResult(action="accept", content={"q1_choice": ["q1_opt1"]})


async def _by_form(world: McpWorld, person: Person, mode: str, number: int) -> float:
    sent: list[float] = []

    async def submit(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        await anyio.sleep(0.3)  # slower than the "not shown" threshold: a person's pace
        sent.append(time.perf_counter())
        return _form_answer()

    async with (
        http_client(person.token) as http,
        Client(
            streamable_http_client(world.agent_url, http_client=http),
            mode=mode,
            elicitation_callback=cast("Any", submit),
        ) as client,
    ):
        await client.call_tool(ASK, {"questions": question_args(1, prefix=f"Form {number}")})
        return time.perf_counter() - sent[0]


async def _by_rest(world: McpWorld, person: Person, mode: str, number: int) -> float:
    sent: list[float] = []
    done: list[float] = []

    async def ask() -> None:
        async with (
            http_client(person.token) as http,
            Client(streamable_http_client(world.agent_url, http_client=http), mode=mode) as c,
        ):
            await c.call_tool(ASK, {"questions": question_args(1, prefix=f"Rest {number}")})
            done.append(time.perf_counter())

    async with watching(world) as events, anyio.create_task_group() as tasks:
        tasks.start_soon(ask)
        created = await events.wait_for("bundle.created")
        while world.services.asking.live_asks < 1:
            await anyio.sleep(0.005)
        async with http_client(person.token) as http:
            sent.append(time.perf_counter())
            await http.post(world.respond_url(created.pending_id), json={"answers": answers_for(1)})
    return done[0] - sent[0]


async def _by_url(world: McpWorld, person: Person, mode: str, number: int) -> float:
    links: list[str] = []
    opened = anyio.Event()
    sent: list[float] = []
    done: list[float] = []

    async def consent(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        assert isinstance(params, ElicitRequestURLParams)
        links.append(params.url)
        opened.set()
        return ElicitResult(action="accept")

    async def ask() -> None:
        async with (
            http_client(person.token) as http,
            Client(
                streamable_http_client(world.agent_url, http_client=http),
                mode=mode,
                elicitation_callback=cast("Any", consent),
            ) as client,
        ):
            await client.call_tool(ASK, {"questions": question_args(1, prefix=f"Url {number}")})
            done.append(time.perf_counter())

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(ask)
        await opened.wait()
        async with httpx2.AsyncClient(timeout=30) as browser:
            login = f"{world.base_url}/api/v1/auth/login"
            await browser.post(login, json={"token": person.token})
            await browser.get(links[0])
            while world.services.asking.live_asks < 1:  # 2026-07-28: the retry waits again
                await anyio.sleep(0.005)
            form = {"action": "answer", "q0-options": ["q1_opt1"], "q0-text": ""}
            sent.append(time.perf_counter())
            await browser.post(links[0], data=form, headers={"Origin": world.base_url})
    return done[0] - sent[0]


SURFACES: dict[str, tuple[Setting, Round]] = {
    "form": (Setting.FORM, _by_form),
    "rest": (Setting.AUTO, _by_rest),
    "url": (Setting.URL, _by_url),
}


async def _cell(directory: Path, surface: str, era: str, rounds: int) -> list[float]:
    setting, run = SURFACES[surface]
    database = directory / f"{surface}-{ERAS[era]}.db"
    world = McpWorld.build(f"sqlite:///{database}", elicitation=setting, progress_interval=5.0)
    async with serving(world):
        person = world.person("alice")
        return [await run(world, person, ERAS[era], number) for number in range(rounds)]


async def main(rounds: int) -> None:
    print(f"answer -> agent's result on /mcp/agent (SQLite, {rounds} rounds per cell), ms")
    print(f"{'surface':<8} {'era':<11} {'median':>8} {'p90':>8} {'min':>8} {'max':>8}")
    with tempfile.TemporaryDirectory() as directory:
        for surface in SURFACES:
            for era in ERAS:
                times = sorted(t * 1000 for t in await _cell(Path(directory), surface, era, rounds))
                p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
                print(
                    f"{surface:<8} {era:<11} {statistics.median(times):8.1f} {p90:8.1f} "
                    f"{times[0]:8.1f} {times[-1]:8.1f}"
                )


def _quiet() -> None:
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    arguments = parser.parse_args()
    _quiet()
    anyio.run(main, arguments.rounds)
