"""Answer-to-wake latency and answers per second with one Clarion process versus three on one
PostgreSQL database (live delivery over ``LISTEN/NOTIFY``).

Every replica is its own operating-system process serving HTTP. Agents ask over the in-session
MCP endpoint (``ask_user_question_kandev``) and people answer over REST ``respond``:

- latency: one agent at a time asks on the first replica; the answer is given on the last one
  (another process when there are three). Measured from just before the ``respond`` request
  is sent to the moment the agent's ``ask`` call returns — both HTTP hops included (the
  answerer keeps its connection alive, like a browser does);
- throughput: ``--agents`` agents, spread over the replicas, are parked at once; then every
  bundle is answered on a replica other than its agent's (the same one when there is only
  one), ``--answerers`` at a time. Answers per second = agents / time until the last agent
  got its answer; server CPU per answer = the CPU time all replicas used meanwhile / agents
  (the capacity figure: the answers per second here are bounded by this client's own CPU);
- live delivery alone: the adapter without HTTP or database writes, waiter and ``deliver`` in
  the same or in different instances (each with its own connections) in this process.

The benchmark process is a Python client sharing the machine with the servers, so the HTTP
figures include a good deal of client time; the last figure isolates what NOTIFY adds.

    CLARION_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test \\
        .venv/bin/python -m benchmarks.multiprocess_bench [--rounds 100] [--agents 60]
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import structlog
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.scratch import scratch_postgres
from clarion.adapters.events import InProcessEventBus
from clarion.adapters.memory import InMemoryClaimRepository, InMemoryStore
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.postgres_notify import PostgresLiveDelivery
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.root.compose import build_clarion
from clarion.app.root.settings import Settings
from clarion.ports.testing.waiters import sample_resolution
from clarion.ports.waiters import Delivery
from tests.integration.multiprocess.clients import (
    ASK,
    TIMEOUT,
    AgentSession,
    agent_session,
    answer_over_rest,
    choose,
    created_bundles,
    question,
)
from tests.integration.multiprocess.cluster import Replica, running_cluster

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
SETTLE_S = 5.0  # more than two notification-worker polls


def _ms(seconds: list[float], quantile: float) -> float:
    ordered = sorted(seconds)
    return 1000 * ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]


class Agent:
    """An agent with an open MCP connection to its replica's in-session endpoint; ``woke`` is
    when its ``ask`` call returned (before the connection is closed)."""

    def __init__(self, replica: Replica, session: AgentSession) -> None:
        self.replica = replica
        self.session = session
        self.woke = 0.0
        self.done = anyio.Event()

    async def ask(self) -> None:
        url = f"{self.replica.base_url}/mcp/session/{self.session.session_id}"
        async with (
            httpx2.AsyncClient(timeout=TIMEOUT) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            result = await client.call_tool(ASK, {"questions": [question()]})
            self.woke = time.perf_counter()
            self.done.set()
        assert not result.is_error, result.content


async def _latency(replicas: list[Replica], rounds: int) -> list[float]:
    asker, answerer = replicas[0], replicas[-1]
    session = await agent_session(asker.base_url, "latency")
    samples: list[float] = []
    async with (
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
        created_bundles(answerer.base_url) as created,
    ):
        for _ in range(rounds):
            agent = Agent(asker, session)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(agent.ask)
                pending_id = (await created.receive()).pending_id
                started = time.perf_counter()
                await answer_over_rest(answerer.base_url, pending_id, choose(1), http=http)
                await agent.done.wait()
            samples.append(agent.woke - started)
    return samples


async def _throughput(replicas: list[Replica], agents: int, answerers: int) -> tuple[float, float]:
    """Answers per second, and the servers' CPU seconds per answer (summed over processes)."""
    count = len(replicas)
    sessions = [await agent_session(replicas[0].base_url, f"agent {i}") for i in range(agents)]
    parked = {
        session.session_id: Agent(replicas[i % count], session)
        for i, session in enumerate(sessions)
    }
    limiter = anyio.CapacityLimiter(answerers)

    async def answer(http: httpx2.AsyncClient, pending_id: str, replica: Replica) -> None:
        async with limiter:
            await answer_over_rest(replica.base_url, pending_id, choose(2), http=http)

    async with (
        httpx2.AsyncClient(timeout=TIMEOUT) as http,
        created_bundles(replicas[0].base_url) as created,
        anyio.create_task_group() as tasks,
    ):
        for agent in parked.values():
            tasks.start_soon(agent.ask)
        bundles = [await created.receive() for _ in range(agents)]
        cpu_before = sum(replica.cpu_seconds() for replica in replicas)
        started = time.perf_counter()
        for bundle in bundles:
            home = replicas.index(parked[bundle.session_id].replica)
            tasks.start_soon(answer, http, bundle.pending_id, replicas[(home + 1) % count])
    cpu = sum(replica.cpu_seconds() for replica in replicas) - cpu_before
    return agents / (max(agent.woke for agent in parked.values()) - started), cpu / agents


async def _adapter_latency(database_url: str, rounds: int, *, across: bool) -> list[float]:
    """Live delivery alone, no HTTP: a task waits on one instance; ``deliver`` is called on
    another instance (``across``) or the same one, with a confirm that does nothing."""
    instances = [
        PostgresLiveDelivery(
            database_url,
            claims=InMemoryClaimRepository(InMemoryStore(), SystemClock(), UuidIds()),
            local_waiters=InMemoryWaiters(),
            local_events=InProcessEventBus(),
        )
        for _ in range(3)
    ]
    holder, responder = instances[0], instances[1 if across else 0]
    resolution = sample_resolution()
    samples: list[float] = []
    async with instances[0], instances[1], instances[2]:
        for number in range(rounds):
            pending_id = f"p{number}"
            holder.waiters.register(pending_id, "s1")
            woke = 0.0

            async def wait(pending_id: str = pending_id) -> None:
                nonlocal woke
                await holder.waiters.wait(pending_id, 30)
                woke = time.perf_counter()

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(wait)
                await anyio.lowlevel.checkpoint()
                started = time.perf_counter()
                result = await responder.waiters.deliver(pending_id, resolution, _nothing, 30)
            assert result.outcome is Delivery.DELIVERED
            samples.append(woke - started)
    return samples


async def _nothing() -> None:
    """A confirm with no durable work, to time the delivery alone."""


def _run(admin_url: str, count: int, rounds: int, agents: int, answerers: int) -> None:
    with (
        scratch_postgres(admin_url) as database_url,
        tempfile.TemporaryDirectory() as folder,
        running_cluster(database_url, Path(folder), [f"r{i}" for i in range(count)]) as replicas,
    ):
        latencies = anyio.run(_latency, replicas, rounds)
        batches = [anyio.run(_throughput, replicas, agents, answerers) for _ in range(3)]
    where = "the same process" if count == 1 else "another process"
    print(
        f"{count} process(es), answered on {where}: answer-to-wake "
        f"p50 {_ms(latencies, 0.50):.1f} ms, p99 {_ms(latencies, 0.99):.1f} ms "
        f"({rounds} sequential asks over HTTP); "
        f"{statistics.median(rate for rate, _ in batches):.0f} answers/s, "
        f"{1000 * statistics.median(cpu for _, cpu in batches):.1f} ms of server CPU per answer "
        f"(medians of 3 batches of {agents} parked agents, {answerers} answerers)",
        flush=True,
    )


async def _rest_answer_cpu(
    replicas: list[Replica], bundles: int, answerers: int, headers: dict[str, str]
) -> float:
    """Server CPU seconds per REST answer (summed over processes) of ``bundles`` bundles
    created over REST, one per session, nobody waiting (each answer resumes its session
    through the outbox), answered ``answerers`` at a time on a replica other than the first
    (the same with one replica). Only the answers fall in the measured window."""
    async with httpx2.AsyncClient(timeout=TIMEOUT, headers=headers) as http:

        async def call(replica: Replica, path: str, body: Any) -> Any:
            response = await http.post(f"{replica.base_url}{path}", json=body)
            assert response.status_code < 300, (response.status_code, response.text)
            return response.json()

        home = replicas[0]
        workspace = await call(home, "/api/v1/workspaces", {"name": "bench"})
        task = await call(home, "/api/v1/tasks", {"title": "t", "workspace_id": workspace["id"]})
        pending_ids = []
        for _ in range(bundles):
            session = await call(home, f"/api/v1/tasks/{task['id']}/sessions", {})
            body = {"session_id": session["id"], "questions": [question()]}
            pending_ids.append(
                (await call(home, "/api/v1/clarification/request", body))["pending_id"]
            )
        limiter = anyio.CapacityLimiter(answerers)
        answerer = replicas[-1]

        async def answer(pending_id: str) -> None:
            async with limiter:
                path = f"/api/v1/clarification/{pending_id}/respond"
                await call(answerer, path, {"answers": choose(1)})

        # Let the notification worker (it polls every CLARION_NOTIFY_POLL_S, 2 s) work off the
        # creates' outbox entries first: otherwise the faster the creates, the more of that
        # work falls into the answers' window.
        await anyio.sleep(SETTLE_S)
        cpu_before = sum(replica.cpu_seconds() for replica in replicas)
        async with anyio.create_task_group() as tasks:
            for pending_id in pending_ids:
                tasks.start_soon(answer, pending_id)
        return (sum(replica.cpu_seconds() for replica in replicas) - cpu_before) / bundles


def _bearer_headers(database_url: str) -> dict[str, str]:
    """A user with a personal access token, written to the database before the servers start."""
    clarion = build_clarion(Settings(database_url=database_url, auth_enabled=True))
    try:
        clarion.upgrade()
        auth = clarion.authentication
        token = auth.issue_token(auth.create_user("bench").id).token
    finally:
        clarion.close()
    return {"Authorization": f"Bearer {token}"}


def _run_auth(admin_url: str, bundles: int, answerers: int) -> None:
    """Server CPU per REST answer with authentication disabled and enabled (issue #15)."""
    for auth in (False, True):
        with (
            scratch_postgres(admin_url) as database_url,
            tempfile.TemporaryDirectory() as folder,
        ):
            headers = _bearer_headers(database_url) if auth else {}
            with running_cluster(database_url, Path(folder), ["r0"], auth=auth) as replicas:
                batches = [
                    anyio.run(_rest_answer_cpu, replicas, bundles, answerers, headers)
                    for _ in range(3)
                ]
        print(
            f"1 process, authentication {'enabled (bearer token)' if auth else 'disabled'}: "
            f"{1000 * statistics.median(batches):.1f} ms of server CPU per REST answer "
            f"(median of 3 batches of {bundles} REST-created bundles, {answerers} answerers; "
            f"batches {', '.join(f'{1000 * cpu:.1f}' for cpu in batches)} ms)",
            flush=True,
        )


def _run_adapter(admin_url: str, rounds: int) -> None:
    with scratch_postgres(admin_url) as database_url:
        for across in (False, True):
            samples = anyio.run(
                functools.partial(_adapter_latency, across=across), database_url, rounds
            )
            where = "another instance" if across else "the same instance"
            print(
                f"live delivery alone, delivered from {where} (3 instances listening): "
                f"p50 {_ms(samples, 0.50):.2f} ms, p99 {_ms(samples, 0.99):.2f} ms "
                f"({rounds} deliveries, no HTTP, no database write)",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100, help="sequential asks for latency")
    parser.add_argument("--agents", type=int, default=60, help="parked agents per batch")
    parser.add_argument("--answerers", type=int, default=16, help="concurrent answer requests")
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("CLARION_TEST_POSTGRES_URL", DEFAULT_URL),
        help="a PostgreSQL URL allowed to create databases (env CLARION_TEST_POSTGRES_URL)",
    )
    parser.add_argument(
        "--auth-only",
        action="store_true",
        help="only the server CPU per REST answer with authentication disabled and enabled",
    )
    args = parser.parse_args()
    # A benchmark is an entry point: keep per-event info logs out of the measurement.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    _run_auth(args.admin_url, args.agents, args.answerers)
    if args.auth_only:
        return
    _run_adapter(args.admin_url, 10 * args.rounds)
    for count in (1, 3):
        _run(args.admin_url, count, args.rounds, args.agents, args.answerers)


if __name__ == "__main__":
    main()
