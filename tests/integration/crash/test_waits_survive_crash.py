"""Issue #28 with real ``clarion serve`` processes killed with SIGKILL, on SQLite and
PostgreSQL: killed right after a live delivery to a waiting agent committed
(``CLARION_TEST_CRASH_AFTER=finalize``), the agent's call got a connection error and never saw
the answer — its retry of the same ask on a restarted server returns that answer (not "already
answered", not a second question); and an MCP task outlives the process that created it."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.integration.crash.serving import (
    QUESTION,
    answer_body,
    pending_ids,
    serving,
    start_serve,
    wait_ready,
)
from tests.integration.mcp.harness import ASK, http_client, mcp_client, structured
from tests.integration.mcp.rpc import call_ask, task_method

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ARGUMENTS: dict[str, Any] = {"questions": [QUESTION]}


@pytest.fixture(
    name="database_url", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def fixture_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'crash.db'}"
    url = request.getfixturevalue("postgres_database_url")
    assert isinstance(url, str)
    return url


async def test_a_retry_after_a_kill_right_after_a_live_delivery_returns_the_answer(
    tmp_path: Path, database_url: str
) -> None:
    crashing = start_serve(
        database_url, "crashing", tmp_path, {"CLARION_TEST_CRASH_AFTER": "finalize"}
    )
    try:
        wait_ready(crashing)
        agent_url = f"{crashing.base_url}/mcp/agent"
        failures: list[BaseException] = []
        async with anyio.create_task_group() as tasks:

            async def ask() -> None:
                try:
                    async with mcp_client(agent_url) as client:
                        await client.call_tool(ASK, ARGUMENTS)
                except Exception as exc:  # noqa: BLE001 - the server dies under the call
                    failures.append(exc)

            tasks.start_soon(ask)
            with httpx2.Client(timeout=60) as http:
                with anyio.fail_after(20):
                    while not (listed := pending_ids(http, crashing.base_url)):
                        await anyio.sleep(0.05)
                [pending_id] = listed
                respond = f"{crashing.base_url}/api/v1/clarification/{pending_id}/respond"
                with pytest.raises(httpx2.TransportError):
                    await anyio.to_thread.run_sync(lambda: http.post(respond, json=answer_body(2)))
        assert await anyio.to_thread.run_sync(crashing.process.wait, 60) == -signal.SIGKILL
        assert failures, "the agent's call cannot have succeeded: its server was killed"
    finally:
        crashing.kill()
    assert '"crashpoint.kill"' in crashing.log()

    with serving(database_url, "restarted", tmp_path) as server:
        async with mcp_client(f"{server.base_url}/mcp/agent") as client:
            result = structured(await client.call_tool(ASK, ARGUMENTS))
        with httpx2.Client(timeout=60) as http:
            assert pending_ids(http, server.base_url) == set()
    assert result["go"]["selected_options"] == ["q1_opt2"]
    assert result["rejected"] is False


async def test_a_task_survives_a_kill_and_tasks_get_returns_the_answer_given_after_it(
    tmp_path: Path, database_url: str
) -> None:
    """#28 item 1: a task created, the server killed with SIGKILL and restarted, the answer
    given over REST: ``tasks/get`` on the new process returns it."""
    first = start_serve(database_url, "first", tmp_path)
    try:
        wait_ready(first)
        async with http_client() as http:
            created = await call_ask(http, f"{first.base_url}/mcp/agent", ASK, ARGUMENTS)
        assert created["resultType"] == "task"
        first.process.send_signal(signal.SIGKILL)
        assert await anyio.to_thread.run_sync(first.process.wait, 60) == -signal.SIGKILL
    finally:
        first.kill()
    pending_id = created["_meta"]["dev.clarion/pending-id"]
    with serving(database_url, "second", tmp_path) as second:
        with httpx2.Client(timeout=60) as http:
            respond = f"{second.base_url}/api/v1/clarification/{pending_id}/respond"
            assert http.post(respond, json=answer_body(1)).status_code == 200
        async with http_client() as http:
            done = await task_method(
                http, f"{second.base_url}/mcp/agent", "tasks/get", created["taskId"]
            )
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"]["go"]["selected_options"] == ["q1_opt1"]
