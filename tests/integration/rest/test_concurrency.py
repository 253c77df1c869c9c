"""Concurrent HTTP calls on one bundle (R1, R3), the live waiter (R7), and a waiter whose
client goes away (fixes upstream §9.21). Every request runs on the test's event loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from starlette.types import Message, Scope

from clarion.adapters.sql import create_engine, upgrade_database
from tests.integration.rest.harness import (
    Caller,
    RestWorld,
    SignallingWaiters,
    aask,
    answers,
    asetup_caller,
    async_client,
    ok,
    sql_ports,
)

ROUNDS = 20


async def _race(client: httpx2.AsyncClient, caller: Caller, pending_id: str) -> list[Any]:
    """Two respond calls with different answers, started together."""
    results: list[Any] = [None, None]

    async def answer(slot: int) -> None:
        body = {"answers": answers(2, option=slot + 1, text=f"caller {slot}")}
        results[slot] = await client.post(
            f"/api/v1/clarification/{pending_id}/respond", json=body, headers=caller.headers
        )

    async with anyio.create_task_group() as group:
        group.start_soon(answer, 0)
        group.start_soon(answer, 1)
    return results


async def _assert_races(world: RestWorld) -> None:
    async with async_client(world.app) as client:
        caller = await asetup_caller(client, world, "alice")
        for _ in range(ROUNDS):
            pending_id = await aask(client, caller, 2)
            first, second = (ok(response) for response in await _race(client, caller, pending_id))
            assert sorted([first["claimed"], second["claimed"]]) == [False, True]
            winner, loser = (first, second) if first["claimed"] else (second, first)
            assert loser["status"] == winner["status"] == "answered"
            assert loser["response"] == winner["response"]


@pytest.mark.anyio
async def test_r3_of_two_concurrent_http_answers_one_claims_and_the_other_replays_it(
    auth_enabled: bool,
) -> None:
    await _assert_races(RestWorld.build(auth_enabled=auth_enabled))


@pytest.mark.anyio
async def test_r3_the_race_holds_over_sqlite_too(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.db'}"
    upgrade_database(url)
    engine = create_engine(url)
    try:
        await _assert_races(RestWorld.build(auth_enabled=True, ports=sql_ports(engine)))
    finally:
        engine.dispose()


@pytest.mark.anyio
@pytest.mark.parametrize("rejected", [False, True], ids=["answer", "reject"])
async def test_r7_a_live_waiter_receives_the_answer_in_the_same_turn(
    auth_enabled: bool, rejected: bool
) -> None:
    waiters = SignallingWaiters()
    world = RestWorld.build(auth_enabled=auth_enabled, waiters=waiters)
    outcome: dict[str, Any] = (
        {"rejected": True, "reject_reason": "later"}
        if rejected
        else {"answers": [{"question_id": "q1", "selected_options": ["q1_opt2", "q1_opt1"]}]}
    )
    async with async_client(world.app) as client:
        caller = await asetup_caller(client, world, "alice")
        pending_id = await aask(client, caller)
        waited: dict[str, Any] = {}

        async def wait() -> None:
            response = await client.get(
                f"/api/v1/clarification/{pending_id}/wait", headers=caller.headers
            )
            waited["body"] = ok(response)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await waiters.entered(pending_id).wait()
                won = ok(
                    await client.post(
                        f"/api/v1/clarification/{pending_id}/respond",
                        json=outcome,
                        headers=caller.headers,
                    )
                )
        assert won["claimed"] is True
        body = waited["body"]
        assert body["pending_id"] == pending_id
        assert body["responded_at"] == won["response"]["responded_at"]
        if rejected:
            # The wait keeps upstream's omitempty Response shape (A4: unchanged).
            assert set(body) == {"pending_id", "rejected", "reject_reason", "responded_at"}
            assert (body["rejected"], body["reject_reason"]) == (True, "later")
        else:
            assert set(body) == {"pending_id", "answers", "responded_at"}
            # Every selected option reaches the agent (fixes §9.25), normalized.
            assert body["answers"] == [
                {"question_id": "q1", "selected_options": ["q1_opt1", "q1_opt2"]}
            ]
        resumes = ok(
            await client.get(
                f"/api/v1/sessions/{caller.session_id}/resumes", headers=caller.headers
            )
        )
        # Delivered live: nobody needed resuming.
        assert resumes == {"resumes": [], "next_cursor": ""}


@pytest.mark.anyio
async def test_a_wait_whose_client_disconnects_leaves_no_waiter_to_block_the_next_answer(
    auth_enabled: bool,
) -> None:
    """§9.21: the abandoned wait is cancelled, so the answer takes the detached path at once
    (well inside the 5 s delivery timeout) instead of blocking and failing with a 500."""
    waiters = SignallingWaiters()
    world = RestWorld.build(auth_enabled=auth_enabled, waiters=waiters)
    async with async_client(world.app) as client:
        caller = await asetup_caller(client, world, "alice")
        pending_id = await aask(client, caller)
        gone = anyio.Event()
        sent: list[Message] = []
        first = True

        async def receive() -> Message:
            nonlocal first
            if first:
                first = False
                return {"type": "http.request", "body": b"", "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            sent.append(message)

        path = f"/api/v1/clarification/{pending_id}/wait"
        headers = [(b"host", b"127.0.0.1:8765")] + [
            (key.lower().encode(), value.encode()) for key, value in caller.headers.items()
        ]
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        with anyio.fail_after(3):
            async with anyio.create_task_group() as group:
                group.start_soon(world.app, scope, receive, send)
                await waiters.entered(pending_id).wait()
                gone.set()
            won = ok(
                await client.post(
                    f"/api/v1/clarification/{pending_id}/respond",
                    json={"answers": answers()},
                    headers=caller.headers,
                )
            )
        assert won["claimed"] is True
        resumes = ok(
            await client.get(
                f"/api/v1/sessions/{caller.session_id}/resumes", headers=caller.headers
            )
        )["resumes"]
        assert [resume["metadata"]["pending_id"] for resume in resumes] == [pending_id]
        assert resumes[0]["metadata"]["answers"] == [
            {"question_id": "q1", "selected_options": ["q1_opt1"], "custom_text": ""}
        ]
