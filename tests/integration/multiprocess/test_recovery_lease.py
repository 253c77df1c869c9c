"""Issue #28 item 4: two real ``clarion serve`` processes on one PostgreSQL database. An agent
waits on replica A; an answer given on A kills A (``kill -9``, ``CLARION_TEST_CRASH_AFTER=
claim``) right after its claim committed, leaving the bundle "in delivery". Replica B sees that
A's liveness lease is free and rolls the delivery back at once: the bundle is answerable on B
long before any grace period. The measured time from kill to answerable is printed
(``pytest -s``)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.integration.crash.serving import pending_ids, start_serve, wait_ready
from tests.integration.multiprocess.clients import (
    agent_session,
    answer_over_rest,
    ask,
    choose,
)
from tests.integration.multiprocess.cluster import Replica

pytestmark = pytest.mark.anyio

# Far above what the lease makes it take (and above the default 120 s): only a recovery that
# knows A is gone can make the bundle answerable within WAIT_S.
GRACE = {"CLARION_RECOVERY_GRACE_S": "600", "CLARION_RECOVERY_INTERVAL_S": "2"}
WAIT_S = 60.0


async def _first_pending(base_url: str) -> str:
    async with httpx2.AsyncClient(timeout=30) as http:
        with anyio.fail_after(30):
            while True:
                listed = await http.get(f"{base_url}/api/v1/clarification/pending")
                bundles = listed.json()["bundles"]
                if bundles:
                    pending_id: str = bundles[0]["pending_id"]
                    return pending_id
                await anyio.sleep(0.05)


def _answerable_within(replica: Replica, pending_id: str, limit_s: float) -> float | None:
    """Seconds until ``pending_id`` is listed as pending on ``replica`` (None: not by then)."""
    start = time.monotonic()
    with httpx2.Client(timeout=30) as http:
        while time.monotonic() - start < limit_s:
            if pending_id in pending_ids(http, replica.base_url):
                return time.monotonic() - start
            time.sleep(0.05)
    return None


async def test_a_bundle_whose_delivering_replica_was_killed_is_answerable_again_on_another(
    postgres_database_url: str, tmp_path: Path
) -> None:
    """#28 item 4: kill -9 of the delivering replica → answerable on the other within
    seconds, whatever the grace period; answered there, the agent's answer is the new one."""
    env = {**GRACE, "CLARION_LIVE_DELIVERY": "postgres"}
    a = start_serve(
        postgres_database_url, "a", tmp_path, {**env, "CLARION_TEST_CRASH_AFTER": "claim"}
    )
    b = start_serve(postgres_database_url, "b", tmp_path, env)
    try:
        wait_ready(a)
        wait_ready(b)
        session = await agent_session(a.base_url, "lease")
        async with anyio.create_task_group() as agents:

            async def agent() -> None:
                # A dies under the agent's wait: its call ends with a transport error.
                with pytest.raises(Exception):  # noqa: B017, PT011 - whatever the client raises
                    await ask(a.base_url, session)

            agents.start_soon(agent)
            pending_id = await _first_pending(a.base_url)
            with pytest.raises(httpx2.TransportError):
                await answer_over_rest(a.base_url, pending_id, choose(1))
            exit_code = await anyio.to_thread.run_sync(a.process.wait, 60)
            killed_at = time.monotonic()
        assert exit_code == -signal.SIGKILL
        assert '"crashpoint.kill"' in a.log()
        waited = await anyio.to_thread.run_sync(_answerable_within, b, pending_id, WAIT_S)
        elapsed = time.monotonic() - killed_at
        assert waited is not None, f"not answerable on B within {WAIT_S} s:\n{b.log()}"
        print(f"\nkill -9 of the delivering replica -> answerable on the other: {elapsed:.2f} s")
        answered = await answer_over_rest(b.base_url, pending_id, choose(2))
        assert answered["claimed"] is True
    finally:
        a.kill()
        b.kill()
