"""A team's deployment under load (issue #35): N ``clarion serve`` replicas on one PostgreSQL,
A agents parked across them, B pending bundles in the backlog, E event streams open,
notifications flowing to a webhook, and people answering from REST on other replicas.

What runs, all in this one asyncio (anyio) client process against real server processes:

- the database: a fresh PostgreSQL database (dropped after) or, with ``--sqlite``, a SQLite
  file (``synchronous=FULL``; one replica, in-process delivery); the B backlog bundles are
  bulk-loaded with :class:`benchmarks.sql_bench.Loader` before the replicas start, in 100
  sessions nobody waits on;
- agents, round robin over the replicas and over five kinds: the in-session endpoint
  ``/mcp/session/{id}`` in the 2026-07-28 and the 2025-11-25 era, ``/mcp/agent`` in both eras,
  and ``/mcp/agent`` with the MCP tasks extension (2026-07-28: the call returns a task at once,
  the agent polls ``tasks/get`` every ``pollIntervalMs`` the task advises, as the extension
  asks of clients, or every ``--task-poll`` seconds when given). Each asks one question whose
  prompt names it, so the ``bundle.created`` event tells which agent parked; a blocking agent
  lists its tools first, as an agent whose model is shown them does, and has its SDK compile
  the checker of the tool's output schema, as an agent that called the tool before has;
- E ``/api/v1/events`` streams spread over the replicas, counting every event they receive;
- one notification route (``webhook:`` to a sink on loopback that answers 204 and counts);
  once every agent has parked, the bench waits for the ``answerable`` notifications the
  parking queued to be delivered (the asks' own work) before it measures anything else, then
  gathers the planner statistics a deployment's autovacuum would have by then
  (``--stale-statistics`` skips that);
- the answers: one per parked agent, at ``--rate`` per second (open loop: each is sent at its
  slot whether or not the earlier ones finished), over ``POST …/respond`` on the replica after
  the agent's own (the same one when there is one replica), on kept-alive connections.

It prints (and writes with ``--json``):

- answers/s sustained: answers / (last agent's wake − first answer sent);
- answer-to-wake p50/p99: from just before ``respond`` is sent to the agent's ``tools/call``
  returning (blocking agents; task agents' answer-to-``completed`` is printed apart, it is
  bounded by their poll interval);
- server CPU per answer: user+system CPU of every replica process (``/proc/<pid>/stat``) over
  the answer window / answers, less the list pages sampled meanwhile (their idle CPU each);
- PostgreSQL CPU per answer: the same for the server processes of this database's own
  backends — pids from ``pg_stat_activity`` (``datname = current_database()``), CPU from
  ``/proc`` (so PostgreSQL must run on this machine; ``pg_stat_statements`` needs a server
  restart to preload and counts time, not CPU). Shared background work (WAL writer,
  checkpointer) is not in it;
- both again, less the background the window carried. The parked fleet costs CPU while
  nobody answers (measured for ``--background`` seconds before the window), but it shrinks
  as the window answers it: an answered agent stops polling and waiting. So the bench also
  measures the same servers once every agent has its answer (after the window's
  notifications went out: the event streams, the worker's outbox polls and the
  live-delivery links are what is left), and takes as the window's background that, plus
  the parked fleet's own part times the share of the fleet still parked, averaged over the
  window (each agent counts until it woke). Subtracting the whole parked fleet's background
  for the whole window, also printed, takes off too much;
- the cores the run kept busy in the answer window (servers, database backends and this
  client's own CPU, which runs every agent and answerer) against the machine's: above about
  0.8 of them, every latency figure includes queueing for a core;
- memory per parked agent, per replica: the replica's RSS after parking minus before, over
  the agents it holds;
- the list page (``GET /clarification/pending``, 50) median/p95 idle and under load (sampled
  every ``--list-every`` seconds during the answer window), both taken by a
  :mod:`benchmarks.list_probe` process of its own: a person's browser does not wait in this
  client's event loop behind a thousand agents (it did until the seventh pass, issue #35);
- the floor: bare single-row conditional ``UPDATE`` + commit per second on the same database,
  right after the answer window.

Run (the defaults are sized for a 2-core machine)::

    CLARION_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test \\
        .venv/bin/python -m benchmarks.replicas_bench --json replicas.json
    .venv/bin/python -m benchmarks.replicas_bench --quick          # a smoke test, seconds
    .venv/bin/python -m benchmarks.replicas_bench --replicas 1 --pending 10000   # one node
    .venv/bin/python -m benchmarks.replicas_bench --sqlite                         # SQLite FULL
    # larger: --replicas 6 --agents 5000 --pending 100000 --streams 100 --rate 100
    .venv/bin/python -m benchmarks.plot_replicas replicas.json -o docs/images/replicas.svg
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import anyio
import attrs
import httpx2
import psycopg
import sqlalchemy as sa
import structlog
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from benchmarks.scratch import scratch_postgres, scratch_sqlite
from benchmarks.sql_bench import Loader, settle
from clarion.adapters.postgres_notify import libpq_conninfo
from clarion.adapters.sql import create_engine, upgrade_database
from clarion.adapters.sql.schema import notification_outbox
from clarion.domain.notifications import DUE
from tests.integration.mcp.rpc import call_ask, task_method
from tests.integration.multiprocess.clients import ASK, choose
from tests.integration.multiprocess.cluster import Replica, running_cluster

DEFAULT_URL: Final = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
KINDS: Final = ("session/2026", "session/2025", "agent/2026", "agent/2025", "agent/tasks")
MODE: Final = {"2026": "auto", "2025": "legacy"}
AGENT_TIMEOUT: Final = httpx2.Timeout(60, read=None)
PARKING: Final = 25  # agents connecting at once
PROMPT: Final = "Agent {}: which way?"
WEBHOOK_GRACE_S: Final = 5.0
# The longest the bench waits, once every agent parked, for the notifications the parking
# itself made (each routed ask's ``answerable`` webhook) to be delivered.
PARKING_NOTIFICATIONS_S: Final = 180.0
# The answer window's allowance for task agents polling as their task advises (2 s here).
MAX_ADVISED_POLL_S: Final = 5.0


def _question(number: int) -> dict[str, Any]:
    return {
        "id": "q1",
        "title": "Q1",
        "prompt": PROMPT.format(number),
        "options": [
            {"label": "Left", "description": "Go left"},
            {"label": "Right", "description": "Go right"},
        ],
    }


def _ms(samples: list[float], quantile: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return 1000 * ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]


def _proc_cpu(pid: int) -> float:
    """User plus system CPU seconds of process ``pid`` (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@attrs.frozen
class Sizes:
    replicas: int
    agents: int
    pending: int
    streams: int
    rate: float
    list_every: float
    task_poll: float | None  # None: the interval the server advises (``pollIntervalMs``)
    kinds: tuple[str, ...] = KINDS
    background_s: float = 4.0
    floor_updates: int = 500
    idle_lists: int = 30
    # Gather planner statistics once the agents parked, as autovacuum would have by then.
    settle_parked: bool = True


@attrs.define(eq=False)
class Agent:
    """One parked agent: where it asks, how, and when its answer reached it."""

    number: int
    kind: str
    replica: Replica
    session_id: str = ""
    pending_id: str = ""
    poll: float | None = None  # None: the task's own ``pollIntervalMs``
    woke: float = 0.0
    error: str = ""
    parked: anyio.Event = attrs.Factory(anyio.Event)
    done: anyio.Event = attrs.Factory(anyio.Event)

    @property
    def url(self) -> str:
        if self.kind.startswith("session/"):
            return f"{self.replica.base_url}/mcp/session/{self.session_id}"
        return f"{self.replica.base_url}/mcp/agent"

    async def run(self) -> None:
        try:
            if self.kind == "agent/tasks":
                await self._task()
            else:
                await self._blocking()
        except Exception as error:  # noqa: BLE001 - counted and printed, the run goes on
            self.error = f"{type(error).__name__}: {error}"
        finally:
            self.parked.set()
            self.done.set()

    async def _blocking(self) -> None:
        mode = MODE[self.kind.rsplit("/", 1)[1]]
        async with (
            httpx2.AsyncClient(timeout=AGENT_TIMEOUT) as http,
            Client(streamable_http_client(self.url, http_client=http), mode=mode) as client,
        ):
            # An agent discovers its tools before it calls one (its model is shown them). The
            # SDK's client otherwise lists them when the first result comes back, to check it
            # against the tool's output schema: a ``tools/list`` per woken agent, in the
            # answer window, that no answer causes (until the twelfth pass of #35 it did).
            await client.list_tools()
            await _warm_validator(client)
            result = await client.call_tool(ASK, {"questions": [_question(self.number)]})
            self.woke = time.perf_counter()
        if result.is_error:
            self.error = str(result.content)[:200]

    async def _task(self) -> None:
        args = {"questions": [_question(self.number)]}
        async with httpx2.AsyncClient(timeout=AGENT_TIMEOUT) as http:
            created = await call_ask(http, self.url, ASK, args)
            task_id = created["taskId"]
            poll = self.poll if self.poll is not None else advised_poll_s(created)
            while True:
                polled = await task_method(http, self.url, "tasks/get", task_id)
                if polled.get("status") != "working":
                    self.woke = time.perf_counter()
                    break
                await anyio.sleep(poll)
        if polled.get("status") != "completed":
            self.error = f"task ended {polled}"[:200]


async def _warm_validator(client: Client) -> None:
    """Have the SDK's client compile its checker of the ask tool's output schema now, as an
    agent that got a result from the tool before has: it compiles one per session, when the
    first result comes back — about 3 ms of the client's CPU that each agent here, asking
    once, paid inside the answer window and inside its wake time (twelfth pass of #35). The
    empty result is refused after the checker is compiled and cached."""
    with contextlib.suppress(RuntimeError):
        await client.session.validate_tool_result(
            ASK, CallToolResult(content=[], structured_content={})
        )


def advised_poll_s(task: dict[str, Any]) -> float:
    """The poll period a task advises in ``pollIntervalMs`` (seconds), else 1 s."""
    advised = task.get("pollIntervalMs")
    if isinstance(advised, int | float) and not isinstance(advised, bool) and advised > 0:
        return advised / 1000
    return 1.0


@attrs.define
class Sink:
    """The webhook receiver notifications are routed to: counts POSTs, answers 204."""

    port: int = 0
    received: int = 0

    async def serve(self, *, task_status: Any) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener:
            task_status.started()
            await listener.serve(self._connection)

    async def _connection(self, stream: anyio.abc.SocketStream) -> None:
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
            await self._exchange(stream)

    async def _exchange(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            buffer = b""
            while True:
                while b"\r\n\r\n" not in buffer:
                    chunk = await stream.receive()
                    buffer += chunk
                head, buffer = buffer.split(b"\r\n\r\n", 1)
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buffer) < length:
                    buffer += await stream.receive()
                buffer = buffer[length:]
                self.received += 1
                await stream.send(b"HTTP/1.1 204 No Content\r\n\r\n")


@attrs.define
class Streams:
    """E event streams held open; ``events`` counts what they received; ``created`` maps a
    parked agent's bundle to it (from the first stream)."""

    events: int = 0
    connected: int = 0

    async def hold(self, replica: Replica, on_created: Any | None, *, task_status: Any) -> None:
        timeout = httpx2.Timeout(30, read=None)
        async with (
            httpx2.AsyncClient(base_url=replica.base_url, timeout=timeout) as http,
            http.stream("GET", "/api/v1/events") as response,
        ):
            if response.status_code != 200:
                raise RuntimeError(f"event stream: {response.status_code}")
            kind = ""
            async for line in response.aiter_lines():
                if line.startswith(": connected"):
                    self.connected += 1
                    task_status.started()
                elif line.startswith("event: "):
                    kind = line.removeprefix("event: ")
                    self.events += 1
                elif line.startswith("data: ") and kind == "bundle.created" and on_created:
                    data = json.loads(line.removeprefix("data: "))
                    await on_created(data["pending_id"], data["session_id"])


@attrs.define
class Cpu:
    """CPU seconds of the replicas and of this database's PostgreSQL backends.

    ``spy``: with ``--py-spy FOLDER``, each replica is also recorded by an external py-spy
    (``CLARION_BENCH_PYSPY``, default ``py-spy`` on the path) over the background period
    and the answer window, as collapsed stacks in ``FOLDER/<replica>-<period>.txt``
    (``benchmarks/collapsed.py`` summarizes them)."""

    replicas: list[Replica]
    database_url: str
    profiling: bool = False
    profiled: str = "window"  # or "background": the period ``--profile`` counts
    spy: Path | None = None
    recorders: list[subprocess.Popen[bytes]] = attrs.Factory(list)

    def signal(self, number: int, period: str = "window") -> None:
        """Tell each replica's profiler (``--profile``) to start or stop counting, for the
        period it profiles."""
        if self.profiling and period == self.profiled:
            for replica in self.replicas:
                replica.process.send_signal(number)

    def record(self, period: str) -> None:
        """Start py-spy on every replica (``--py-spy``), until :meth:`stop_recording`."""
        if self.spy is None:
            return
        for replica in self.replicas:
            command = [
                os.environ.get("CLARION_BENCH_PYSPY", "py-spy"),
                "record",
                "--pid",
                str(replica.process.pid),
                "--format",
                "raw",
                "--rate",
                "250",
                "--threads",
                "--gil",
                "--nonblocking",
                "--output",
                str(self.spy / f"{replica.name}-{period}.txt"),
            ]
            self.recorders.append(
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            )

    def stop_recording(self) -> None:
        """Stop the py-spy recorders (SIGINT: they write their output) and wait for them."""
        for recorder in self.recorders:
            recorder.send_signal(signal.SIGINT)
        for recorder in self.recorders:
            recorder.wait(60)
        self.recorders.clear()

    def backend_pids(self) -> list[int]:
        if not self.database_url.startswith("postgresql"):
            return []
        with psycopg.connect(libpq_conninfo(self.database_url), autocommit=True) as connection:
            rows = connection.execute(
                "SELECT pid FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchall()
        return [int(row[0]) for row in rows]

    def sessions(self) -> int:
        """Connections ever opened to this database (``pg_stat_database.sessions``; 0 on
        SQLite): how many the window opened tells a pool that keeps reconnecting, whose
        short-lived backends' CPU :meth:`sample` cannot see (they are gone by its end)."""
        if not self.database_url.startswith("postgresql"):
            return 0
        with psycopg.connect(libpq_conninfo(self.database_url), autocommit=True) as connection:
            row = connection.execute(
                "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()
        return int(row[0]) if row is not None else 0

    def sample(self) -> tuple[float, dict[int, float]]:
        server = sum(_proc_cpu(replica.process.pid) for replica in self.replicas)
        return server, {pid: _proc_cpu(pid) for pid in self.backend_pids()}

    @staticmethod
    def database_delta(before: dict[int, float], after: dict[int, float]) -> float:
        """Backends present at the end: their CPU since the start (0 for new ones)."""
        return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


ROOT: Final = Path(__file__).resolve().parents[1]


def _probe(replica: Replica, *mode: str) -> list[str]:
    """The command of a :mod:`benchmarks.list_probe` on ``replica``'s list page."""
    return [sys.executable, "-m", "benchmarks.list_probe", replica.base_url, *mode]


def _latencies(output: str) -> list[float]:
    return [float(line) for line in output.split()]


async def _idle_list(replicas: list[Replica], count: int) -> tuple[list[float], float]:
    """List page latencies with nothing else running (from a :mod:`benchmarks.list_probe`
    process, as under load), and the servers' CPU per page."""
    before = sum(_proc_cpu(replica.process.pid) for replica in replicas)
    done = await anyio.run_process(_probe(replicas[-1], "--count", str(count)), cwd=ROOT)
    after = sum(_proc_cpu(replica.process.pid) for replica in replicas)
    samples = _latencies(done.stdout.decode())
    return samples, (after - before) / (count + 1)  # and its warm-up request


@contextmanager
def _sampling_lists(replica: Replica, every: float) -> Iterator[list[float]]:
    """A :mod:`benchmarks.list_probe` process sampling ``replica``'s list page every
    ``every`` seconds for the duration of the block; the list holds its latencies after."""
    probe = subprocess.Popen(
        _probe(replica, "--every", str(every)),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    listed: list[float] = []
    try:
        yield listed
    finally:
        output, _ = probe.communicate(timeout=120)  # closes its stdin: it stops
    if probe.returncode != 0:
        raise RuntimeError(f"list probe exited {probe.returncode}")
    listed.extend(_latencies(output.decode()))


@asynccontextmanager
async def _parked(
    replicas: list[Replica], sizes: Sizes, session_ids: list[str], streams: Streams
) -> AsyncIterator[list[Agent]]:
    """A agents parked (their bundle created), E streams open; cancelled on exit."""
    agents = [
        Agent(
            number=n,
            kind=sizes.kinds[n % len(sizes.kinds)],
            replica=replicas[n % len(replicas)],
            session_id=session_ids[n],
            poll=sizes.task_poll,
        )
        for n in range(sizes.agents)
    ]
    by_session = {a.session_id: a for a in agents if a.kind.startswith("session/")}
    by_prompt = {PROMPT.format(agent.number): agent for agent in agents}
    found, created = anyio.create_memory_object_stream[tuple[str, str]](sizes.agents + 100)

    async def on_created(pending_id: str, session_id: str) -> None:
        await found.send((pending_id, session_id))

    async def match(http: httpx2.AsyncClient) -> None:
        """Which agent a new bundle belongs to: by its session (in-session endpoint) or by
        the prompt in its session's transcript (``/mcp/agent`` creates the session)."""
        async for pending_id, session_id in created:
            agent = by_session.get(session_id)
            if agent is None:
                path = f"{replicas[0].base_url}/api/v1/sessions/{session_id}/messages"
                messages = (await http.get(path)).json().get("messages", [])
                prompts = [m["content"] for m in messages if m["content"] in by_prompt]
                agent = by_prompt[prompts[0]] if prompts else None
            if agent is not None:
                agent.pending_id = pending_id
                agent.parked.set()

    limiter = anyio.CapacityLimiter(PARKING)

    async def start(agent: Agent) -> None:
        async with limiter:
            tasks.start_soon(agent.run)
            await agent.parked.wait()

    async with (
        found,
        created,
        httpx2.AsyncClient(timeout=30) as http,
        anyio.create_task_group() as tasks,
    ):
        await tasks.start(streams.hold, replicas[0], on_created)
        for number in range(1, sizes.streams):
            await tasks.start(streams.hold, replicas[number % len(replicas)], None)
        tasks.start_soon(match, http)
        async with anyio.create_task_group() as parking:
            for agent in agents:
                parking.start_soon(start, agent)
        yield agents
        tasks.cancel_scope.cancel()


async def _answer(
    http: httpx2.AsyncClient, replica: Replica, agent: Agent, sent: dict[int, float]
) -> None:
    path = f"{replica.base_url}/api/v1/clarification/{agent.pending_id}/respond"
    sent[agent.number] = time.perf_counter()
    response = await http.post(path, json={"answers": choose(1)})
    if response.status_code != 200:
        agent.error = agent.error or f"respond {response.status_code}: {response.text[:200]}"


def parked_share(woke: list[float], started: float, ended: float) -> float:
    """The share of the fleet still parked, averaged over the answer window
    ``[started, ended]``: each agent counts until it woke (its blocking call returned, or its
    poll saw ``completed``), and then stops costing the fleet's background. 0 for an empty
    fleet or window; an agent that never woke counts to the end."""
    length = ended - started
    if not woke or length <= 0:
        return 0.0
    held = sum(min(max((at or ended) - started, 0.0), length) for at in woke)
    return held / (len(woke) * length)


async def _window(
    replicas: list[Replica], agents: list[Agent], sizes: Sizes, cpu: Cpu
) -> dict[str, Any]:
    """Answer every parked agent at the offered rate; list pages sampled meanwhile."""
    sent: dict[int, float] = {}

    cpu.signal(signal.SIGUSR1)  # the profiler, when there is one, counts from here
    cpu.record("window")
    sessions_before = cpu.sessions()
    server_before, database_before = cpu.sample()
    client_before = time.process_time()
    started = time.perf_counter()
    with _sampling_lists(replicas[-1], sizes.list_every) as listed:
        async with (
            httpx2.AsyncClient(timeout=AGENT_TIMEOUT) as http,
            anyio.create_task_group() as tasks,
        ):
            for slot, agent in enumerate(agents):
                await anyio.sleep(max(0.0, started + slot / sizes.rate - time.perf_counter()))
                answerer = replicas[(replicas.index(agent.replica) + 1) % len(replicas)]
                tasks.start_soon(_answer, http, answerer, agent, sent)
            with anyio.fail_after(60 + 2 * (sizes.task_poll or MAX_ADVISED_POLL_S)):
                for agent in agents:
                    await agent.done.wait()
    ended = max([agent.woke for agent in agents if agent.woke] or [time.perf_counter()])
    client_cpu_s = time.process_time() - client_before
    server_after, database_after = cpu.sample()
    cpu.signal(signal.SIGUSR2)
    cpu.stop_recording()
    sessions = cpu.sessions() - sessions_before - 3  # less the three of these statistics
    blocking = [a.woke - sent[a.number] for a in agents if a.woke and a.kind != "agent/tasks"]
    tasked = [a.woke - sent[a.number] for a in agents if a.woke and a.kind == "agent/tasks"]
    return {
        "seconds": ended - started,
        "parked_share": parked_share([a.woke for a in agents], started, ended),
        "answers": len(sent),
        "server_cpu_s": server_after - server_before,
        "database_cpu_s": Cpu.database_delta(database_before, database_after),
        "client_cpu_s": client_cpu_s,
        "database_sessions": sessions,
        "wake": blocking,
        "task_wake": tasked,
        "wake_by_kind": {
            kind: [a.woke - sent[a.number] for a in agents if a.woke and a.kind == kind]
            for kind in sizes.kinds
        },
        "list": listed,
    }


def _due_notifications(database_url: str) -> int:
    """Outbox entries due by now (``status = 'due'``): notifications still to deliver."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            count = connection.execute(
                sa.select(sa.func.count())
                .select_from(notification_outbox)
                .where(
                    notification_outbox.c.status == DUE,
                    notification_outbox.c.due_at <= datetime.now(UTC),
                )
            ).scalar_one()
    finally:
        engine.dispose()
    return int(count)


async def _parking_notified(database_url: str, limit_s: float) -> tuple[float, int]:
    """Wait until the notifications the parking made are delivered: every routed ask queued
    an ``answerable`` webhook, and the worker may still be sending them when the last agent
    has parked. They are the asks' cost, neither the parked fleet's idle cost nor the
    answers', so the background and the answer window are measured after them (before the
    ninth pass of issue #35 they were not, and their delivery counted in both). Returns the
    seconds waited and the entries still due when ``limit_s`` ran out (0 once delivered)."""
    started = time.perf_counter()
    due = await anyio.to_thread.run_sync(_due_notifications, database_url)
    while due and time.perf_counter() - started < limit_s:
        await anyio.sleep(0.5)
        due = await anyio.to_thread.run_sync(_due_notifications, database_url)
    return time.perf_counter() - started, due


def _settle(database_url: str) -> float:
    """Bring the database to the state a deployment's would be in once the agents parked
    (:func:`benchmarks.sql_bench.settle`): PostgreSQL's planner statistics as autovacuum
    gathers them while tables grow, which a server running with ``autovacuum = off`` (the
    development machine's) never does. Without them the outbox, which grows from nothing
    during the parking, was read whole by statements meant to probe it by key (issue #35,
    tenth pass). Returns the seconds it took."""
    started = time.perf_counter()
    engine = create_engine(database_url)
    try:
        settle(engine)
    finally:
        engine.dispose()
    return time.perf_counter() - started


async def _background(
    cpu: Cpu, seconds: float, period: str = "background"
) -> tuple[float, float, float]:
    """CPU seconds per second (servers, database, this client) with nobody answering: of
    the parked fleet (task polls, progress notifications, heartbeats, the notification
    worker's polls), or with ``period`` "emptied", of the same servers once every agent was
    answered (what does not scale with the parked fleet)."""
    cpu.signal(signal.SIGUSR1, period)
    cpu.record(period)
    server_before, database_before = cpu.sample()
    client_before = time.process_time()
    started = time.perf_counter()
    await anyio.sleep(seconds)
    server_after, database_after = cpu.sample()
    cpu.stop_recording()
    cpu.signal(signal.SIGUSR2, period)
    seconds = time.perf_counter() - started
    return (
        (server_after - server_before) / seconds,
        Cpu.database_delta(database_before, database_after) / seconds,
        (time.process_time() - client_before) / seconds,
    )


async def _load(
    replicas: list[Replica], sizes: Sizes, session_ids: list[str], cpu: Cpu
) -> dict[str, Any]:
    sink, streams = Sink(), Streams()
    async with httpx2.AsyncClient(timeout=30) as http, anyio.create_task_group() as tasks:
        await tasks.start(sink.serve)
        route = {"channel": f"webhook:http://127.0.0.1:{sink.port}/hook"}
        created = await http.post(f"{replicas[0].base_url}/api/v1/notifications/routes", json=route)
        if created.status_code >= 300:
            raise RuntimeError(f"route: {created.status_code} {created.text}")
        idle, list_cpu = await _idle_list(replicas, sizes.idle_lists)
        rss_before = [_rss_kib(replica.process.pid) for replica in replicas]
        park_started = time.perf_counter()
        with anyio.fail_after(120 + sizes.agents):
            async with _parked(replicas, sizes, session_ids, streams) as agents:
                parked_s = time.perf_counter() - park_started
                rss_after = [_rss_kib(replica.process.pid) for replica in replicas]
                notified = await _parking_notified(cpu.database_url, PARKING_NOTIFICATIONS_S)
                settled_s = (
                    await anyio.to_thread.run_sync(_settle, cpu.database_url)
                    if sizes.settle_parked
                    else None
                )
                background = await _background(cpu, sizes.background_s)
                window = await _window(replicas, agents, sizes, cpu)
                # What stays once every agent has its answer (event streams, the worker's
                # outbox polls, the live-delivery links): measured after the window's own
                # notifications went out.
                await _parking_notified(cpu.database_url, PARKING_NOTIFICATIONS_S)
                emptied = await _background(cpu, sizes.background_s, "emptied")
        with anyio.move_on_after(WEBHOOK_GRACE_S):  # the worker polls its outbox every 2 s
            while not sink.received:
                await anyio.sleep(0.1)
        tasks.cancel_scope.cancel()
    held = [sum(1 for a in agents if a.replica is replica) for replica in replicas]
    window["server_cpu_s"] -= list_cpu * len(window["list"])
    return window | {
        "background_cpu_per_s": background,
        "emptied_cpu_per_s": emptied,
        "errors": [f"{a.kind} #{a.number}: {a.error}" for a in agents if a.error],
        "parked_s": parked_s,
        "parking_notified": notified,
        "settled_s": settled_s,
        "idle_list": idle,
        "list_cpu_ms": 1000 * list_cpu,
        "memory_kib_per_agent": [
            (after - before) / max(1, count)
            for before, after, count in zip(rss_before, rss_after, held, strict=True)
        ],
        "events_received": streams.events,
        "streams_connected": streams.connected,
        "webhooks_received": sink.received,
    }


def _floor(database_url: str, count: int) -> float:
    """Bare single-row conditional UPDATE + commit per second on the run's database."""
    engine = create_engine(database_url)
    metadata = sa.MetaData()
    bare = sa.Table(
        "bench_bare_floor",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
    )
    try:
        metadata.create_all(engine)
        with engine.begin() as connection:
            connection.execute(sa.insert(bare), [{"id": i, "version": 0} for i in range(count)])
        started = time.perf_counter()
        for index in range(count):
            with engine.begin() as connection:
                changed = connection.execute(
                    sa.update(bare)
                    .where(bare.c.id == index, bare.c.version == 0)
                    .values(version=bare.c.version + 1)
                ).rowcount
            if changed != 1:
                raise RuntimeError(f"bare update {index} lost")
        return count / (time.perf_counter() - started)
    finally:
        metadata.drop_all(engine)
        engine.dispose()


def _seed(database_url: str, sizes: Sizes) -> list[str]:
    """Migrate; bulk-load the backlog and one RUNNING session per agent (for the in-session
    endpoint); return those sessions' ids."""
    upgrade_database(database_url)
    engine = create_engine(database_url)
    try:
        loader = Loader(engine)
        owners = loader.sessions(100, [""])
        loader.bundles(sizes.pending, owners, answered=False)
        sessions = [session for _, session, _ in loader.sessions(sizes.agents, [""])]
        settle(engine)
    finally:
        engine.dispose()
    return sessions


def _environment(sizes: Sizes) -> dict[str, str]:
    """The replicas' settings: limits raised to the load (one synthetic identity with auth
    disabled, every client from 127.0.0.1), webhooks allowed to reach loopback."""
    connections = 3 * sizes.agents + sizes.streams + 200
    return {
        "CLARION_MAX_CONNECTIONS_PER_CLIENT": str(connections),
        "CLARION_LIMIT_CONCURRENCY": str(connections),
        "CLARION_MAX_EVENT_STREAMS": str(sizes.streams + 10),
        "CLARION_MAX_MCP_SESSIONS": str(sizes.agents + 10),
        "CLARION_OUTBOUND_ALLOW": "127.0.0.1",
    }


@contextmanager
def _database(args: argparse.Namespace) -> Iterator[str]:
    if args.sqlite:
        with scratch_sqlite() as url:
            yield url
    else:
        with scratch_postgres(args.admin_url) as url:
            yield url


def _profiler(folder: Path | None) -> Callable[[str], list[str]] | None:
    """With ``--profile``: each replica runs under :mod:`benchmarks.sampler`, writing
    ``FOLDER/<replica>.txt`` when it stops."""
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    return lambda name: ["-m", "benchmarks.sampler", str(folder / f"{name}.txt")]


def _stop(replicas: list[Replica]) -> None:
    """SIGTERM and wait, so the profiler gets to write its report."""
    for replica in replicas:
        replica.process.send_signal(signal.SIGTERM)
    for replica in replicas:
        replica.process.wait(60)


def run(args: argparse.Namespace, sizes: Sizes) -> dict[str, Any]:
    """One whole run: the figures as a JSON-able document."""
    if args.py_spy:
        args.py_spy.mkdir(parents=True, exist_ok=True)
    with _database(args) as database_url, tempfile.TemporaryDirectory() as folder:
        session_ids = _seed(database_url, sizes)
        names = [f"r{i}" for i in range(sizes.replicas)]
        with running_cluster(
            database_url,
            Path(folder),
            names,
            env=_environment(sizes),
            launcher_of=_profiler(args.profile),
        ) as replicas:
            cpu = Cpu(
                replicas,
                database_url,
                profiling=args.profile is not None,
                profiled="background" if args.profile_background else "window",
                spy=args.py_spy,
            )
            raw = anyio.run(_load, replicas, sizes, session_ids, cpu)
            floor = _floor(database_url, sizes.floor_updates)
            if args.profile:
                _stop(replicas)
    return _figures(raw, sizes, floor, "sqlite" if args.sqlite else "postgresql")


def _figures(raw: dict[str, Any], sizes: Sizes, floor: float, database: str) -> dict[str, Any]:
    answers = max(1, raw["answers"])
    server_idle, db_idle, client_idle = raw["background_cpu_per_s"]
    server_empty, db_empty, _ = raw["emptied_cpu_per_s"]
    seconds, share = raw["seconds"], raw["parked_share"]
    # The background the window carried: what an empty fleet costs, plus the parked fleet's
    # own part for the share of it still parked (answered agents stop polling and waiting).
    server_carried = seconds * (server_empty + (server_idle - server_empty) * share)
    db_carried = seconds * (db_empty + (db_idle - db_empty) * share)
    busy = raw["server_cpu_s"] + raw["database_cpu_s"] + raw["client_cpu_s"]
    return {
        "database": database,
        "sizes": attrs.asdict(sizes),
        "answers": raw["answers"],
        "errors": raw["errors"],
        "answers_per_s": raw["answers"] / raw["seconds"],
        "parking_s": raw["parked_s"],
        "parking_notified_s": raw["parking_notified"][0],
        "settled_s": raw["settled_s"],
        "parking_notifications_left": raw["parking_notified"][1],
        "wake_ms": {"p50": _ms(raw["wake"], 0.5), "p99": _ms(raw["wake"], 0.99)},
        "task_wake_ms": {"p50": _ms(raw["task_wake"], 0.5), "p99": _ms(raw["task_wake"], 0.99)},
        "wake_ms_p50_by_kind": {k: _ms(v, 0.5) for k, v in raw["wake_by_kind"].items()},
        "server_cpu_ms_per_answer": 1000 * raw["server_cpu_s"] / answers,
        "database_cpu_ms_per_answer": 1000 * raw["database_cpu_s"] / answers,
        "database_connections_opened": raw["database_sessions"],
        "background_cpu_ms_per_s": {
            "server": 1000 * server_idle,
            "database": 1000 * db_idle,
            "client": 1000 * client_idle,
        },
        # The machine's cores the run kept busy in the answer window: the servers, their
        # database backends and this client (which runs every agent and answerer).
        "client_cpu_ms_per_s": 1000 * raw["client_cpu_s"] / seconds,
        "cores_busy": {"window": busy / seconds, "of": os.cpu_count() or 1},
        "server_cpu_ms_per_answer_net": 1000
        * (raw["server_cpu_s"] - server_idle * seconds)
        / answers,
        "database_cpu_ms_per_answer_net": 1000
        * (raw["database_cpu_s"] - db_idle * seconds)
        / answers,
        "emptied_cpu_ms_per_s": {"server": 1000 * server_empty, "database": 1000 * db_empty},
        "parked_share": share,
        "server_cpu_ms_per_answer_carried": 1000 * (raw["server_cpu_s"] - server_carried) / answers,
        "database_cpu_ms_per_answer_carried": 1000 * (raw["database_cpu_s"] - db_carried) / answers,
        "memory_kib_per_agent": raw["memory_kib_per_agent"],
        "list_ms": {
            "idle_median": _ms(raw["idle_list"], 0.5),
            "idle_p95": _ms(raw["idle_list"], 0.95),
            "load_median": _ms(raw["list"], 0.5),
            "load_p95": _ms(raw["list"], 0.95),
            "load_samples": len(raw["list"]),
            "server_cpu_ms_per_page": raw["list_cpu_ms"],
        },
        "floor_updates_per_s": floor,
        "events_received": raw["events_received"],
        "streams_connected": raw["streams_connected"],
        "webhooks_received": raw["webhooks_received"],
    }


def _ratio(server: float, database: float) -> str:
    return f"{server / database if database > 0 else float('nan'):.1f}x"


def _database_cpu(figures: dict[str, Any]) -> str:
    if figures["database"] == "sqlite":
        return "database CPU: inside the server process (SQLite)"
    server, database = figures["server_cpu_ms_per_answer"], figures["database_cpu_ms_per_answer"]
    return (
        f"PostgreSQL CPU per answer: {database:.2f} ms (this database's backends); ratio "
        f"{_ratio(server, database)}"
    )


def report(figures: dict[str, Any]) -> str:
    sizes, listed = figures["sizes"], figures["list_ms"]
    server = figures["server_cpu_ms_per_answer"]
    background = figures["background_cpu_ms_per_s"]
    server_net = figures["server_cpu_ms_per_answer_net"]
    database_net = figures["database_cpu_ms_per_answer_net"]
    emptied = figures["emptied_cpu_ms_per_s"]
    server_carried = figures["server_cpu_ms_per_answer_carried"]
    database_carried = figures["database_cpu_ms_per_answer_carried"]
    memory = ", ".join(f"{kib:.1f}" for kib in figures["memory_kib_per_agent"])
    lines = [
        f"{figures['database']}: {sizes['replicas']} replica(s), {sizes['agents']} parked "
        f"agents (parked in {figures['parking_s']:.1f} s), {sizes['pending']} pending in the "
        f"backlog, {figures['streams_connected']} event streams, offered {sizes['rate']:g}/s",
        f"the parking's own notifications delivered {figures['parking_notified_s']:.1f} s after "
        f"the last agent parked ({figures['parking_notifications_left']} still due); the "
        f"background and the answer window are measured after them",
        (
            f"planner statistics gathered after parking, as autovacuum would "
            f"({figures['settled_s']:.1f} s)"
            if figures["settled_s"] is not None
            else "planner statistics as of the bulk load (--stale-statistics)"
        ),
        f"answers/s sustained: {figures['answers_per_s']:.1f} ({figures['answers']} answers, "
        f"{len(figures['errors'])} errors)",
        f"answer-to-wake: p50 {figures['wake_ms']['p50']:.1f} ms, p99 "
        f"{figures['wake_ms']['p99']:.1f} ms (blocking agents); task agents to 'completed' "
        f"p50 {figures['task_wake_ms']['p50']:.0f} ms (poll "
        + (
            f"every {sizes['task_poll']:g} s)"
            if sizes["task_poll"] is not None
            else "as the server advises)"
        ),
        "  p50 by kind: "
        + ", ".join(f"{k} {v:.0f} ms" for k, v in figures["wake_ms_p50_by_kind"].items()),
        f"server CPU per answer: {server:.2f} ms (all replicas); " + _database_cpu(figures),
        f"  less the parked fleet's background (server {background['server']:.0f} ms/s, "
        f"database {background['database']:.0f} ms/s while nobody answers): server "
        f"{server_net:.2f} ms, database {database_net:.2f} ms per answer",
        f"  less the background the window carried (the fleet still parked: "
        f"{figures['parked_share']:.2f} of it on average; with every agent answered: server "
        f"{emptied['server']:.0f} ms/s, database {emptied['database']:.0f} ms/s): server "
        f"{server_carried:.2f} ms, database {database_carried:.2f} ms per answer; ratio "
        f"{_ratio(server_carried, database_carried)}",
        f"cores busy in the answer window: {figures['cores_busy']['window']:.2f} of "
        f"{figures['cores_busy']['of']} (servers, database and this client, which used "
        f"{figures['client_cpu_ms_per_s']:.0f} ms/s; {background['client']:.0f} ms/s while "
        f"nobody answered)",
        f"memory per parked agent, per replica: {memory} KiB",
        f"list page of 50: idle median {listed['idle_median']:.1f} ms (p95 "
        f"{listed['idle_p95']:.1f}); under load median {listed['load_median']:.1f} ms (p95 "
        f"{listed['load_p95']:.1f}, {listed['load_samples']} samples); ratio "
        f"{listed['load_median'] / listed['idle_median']:.2f}x",
        f"floor: {figures['floor_updates_per_s']:.0f} bare conditional UPDATEs/s (same database, "
        f"same run)",
        f"events received on the streams: {figures['events_received']}; webhooks received: "
        f"{figures['webhooks_received']}",
    ]
    if figures["database"] != "sqlite":
        lines.append(
            f"database connections opened in the answer window: "
            f"{figures['database_connections_opened']} (their backends' CPU is counted only "
            f"while they are still open at its end)"
        )
    lines += [f"  error: {error}" for error in figures["errors"][:10]]
    return "\n".join(lines)


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(kind.strip() for kind in text.split(",") if kind.strip())
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown or not kinds:
        raise SystemExit(f"--kinds: unknown {unknown or text!r}; choose from {', '.join(KINDS)}")
    return kinds


def _arguments(argv: list[str] | None) -> tuple[argparse.Namespace, Sizes]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--agents", type=int, default=1000, help="parked agents")
    parser.add_argument("--pending", type=int, default=10_000, help="backlog bundles")
    parser.add_argument("--streams", type=int, default=30, help="open event streams")
    parser.add_argument("--rate", type=float, default=25.0, help="offered answers per second")
    parser.add_argument("--list-every", type=float, default=0.5, help="list sample period (s)")
    parser.add_argument(
        "--task-poll",
        type=float,
        default=None,
        help="tasks/get period (s); default: the task's advised pollIntervalMs",
    )
    parser.add_argument(
        "--background", type=float, default=4.0, help="parked fleet's idle period measured (s)"
    )
    parser.add_argument("--sqlite", action="store_true", help="SQLite FULL, one replica")
    parser.add_argument(
        "--kinds",
        default=",".join(KINDS),
        help=f"agent kinds, round robin (default: all of {','.join(KINDS)})",
    )
    parser.add_argument(
        "--stale-statistics",
        action="store_true",
        help="measure without gathering the planner statistics a deployment has after parking",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--profile", type=Path, help="sample each replica's stacks into this folder"
    )
    parser.add_argument(
        "--profile-background",
        action="store_true",
        help="--profile counts the parked fleet's idle period instead of the answer window",
    )
    parser.add_argument(
        "--py-spy",
        type=Path,
        help="record each replica with py-spy (CLARION_BENCH_PYSPY) into this folder",
    )
    parser.add_argument(
        "--admin-url",
        default=os.environ.get("CLARION_TEST_POSTGRES_URL", DEFAULT_URL),
        help="a PostgreSQL URL allowed to create databases (env CLARION_TEST_POSTGRES_URL)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.replicas, args.agents, args.pending, args.streams, args.rate = 2, 10, 200, 4, 20.0
    sizes = Sizes(
        replicas=1 if args.sqlite else args.replicas,
        agents=args.agents,
        pending=max(50, args.pending),
        streams=max(1, args.streams),
        rate=args.rate,
        list_every=args.list_every,
        task_poll=args.task_poll,
        kinds=_kinds(args.kinds),
        background_s=args.background,
        settle_parked=not args.stale_statistics,
    )
    if args.quick:
        sizes = attrs.evolve(sizes, background_s=1.0, floor_updates=100, idle_lists=10)
    return args, sizes


def main(argv: list[str] | None = None) -> int:
    args, sizes = _arguments(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    logging.disable(logging.WARNING)
    figures = run(args, sizes)
    print(report(figures), flush=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 1 if figures["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
