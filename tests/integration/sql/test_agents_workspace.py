"""#29 S6 on the databases: ``/mcp/agent``'s "Agents" workspace is one per owner even when
several processes create it at once (a unique key the database enforces), and finding it
costs the same whatever the number of the caller's workspaces (a lookup by that key, on an
index; no scan)."""

from __future__ import annotations

import functools
import json
import multiprocessing
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine

from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.sql import SqlClaimRepository, SqlHostRepository, create_engine
from clarion.adapters.sql.schema import workspaces
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.usecases.agents import AGENT_WORKSPACE_NAME, AgentSessions
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.services import build_services
from clarion.domain.model import Identity
from clarion.ports.testing import ManualClock
from tests.integration.sql.test_races import run_together
from tests.unit.app.world import FakeDispatcher, RecordingEvents, drafts

RACERS = 8
PROCESSES = 4
ALICE = Identity.user("alice")


@pytest.fixture(name="second_engine")
def fixture_second_engine(engine: Engine) -> Iterator[Engine]:
    """Another pool on the same database, as a second Clarion process would have."""
    other = create_engine(engine.url)
    try:
        yield other
    finally:
        other.dispose()


def _agents_workspaces(engine: Engine, owner_id: str) -> list[tuple[str, str]]:
    with engine.connect() as connection:
        rows = connection.execute(
            sa.select(workspaces.c.id, workspaces.c.name).where(
                workspaces.c.owner_id == owner_id, workspaces.c.name == AGENT_WORKSPACE_NAME
            )
        )
        return [(row.id, row.name) for row in rows]


def test_racing_threads_on_two_pools_create_one_agents_workspace_per_owner(
    engine: Engine, second_engine: Engine
) -> None:
    clock = ManualClock()
    hosts = [SqlHostRepository(pool, clock, UuidIds()) for pool in (engine, second_engine)]
    for owner in ("alice", "bob", ""):
        racers = [
            functools.partial(hosts[n % 2].agents_workspace, owner, AGENT_WORKSPACE_NAME)
            for n in range(RACERS)
        ]
        results = run_together(list(racers))
        assert len({workspace.id for workspace in results}) == 1
        assert _agents_workspaces(engine, owner) == [(results[0].id, AGENT_WORKSPACE_NAME)]


def _create_in_process(url: str, owner: str, barrier: Any, out: Any) -> None:
    engine = create_engine(url)
    try:
        barrier.wait(timeout=60)
        workspace = SqlHostRepository(engine, SystemClock(), UuidIds()).agents_workspace(
            owner, AGENT_WORKSPACE_NAME
        )
        out.put(workspace.id)
    finally:
        engine.dispose()


@pytest.mark.server
def test_racing_processes_create_one_agents_workspace(engine: Engine) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    out = context.Queue()
    url = engine.url.render_as_string(hide_password=False)
    processes = [
        context.Process(target=_create_in_process, args=(url, "alice", barrier, out))
        for _ in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [process.exitcode for process in processes] == [0] * PROCESSES
    ids = {out.get(timeout=10) for _ in range(PROCESSES)}
    assert len(ids) == 1
    assert _agents_workspaces(engine, "alice") == [(ids.pop(), AGENT_WORKSPACE_NAME)]


def _agent_sessions(engine: Engine) -> AgentSessions:
    clock = ManualClock()
    ids = UuidIds()
    host = SqlHostRepository(engine, clock, ids)
    services = build_services(
        claims=SqlClaimRepository(engine, clock, ids),
        host=host,
        authorizer=HostTaskAuthorizer(host),
        waiters=InMemoryWaiters(),
        dispatcher=FakeDispatcher(),
        events=RecordingEvents(),
        clock=clock,
        ids=ids,
    )
    return AgentSessions(
        host=services.host,
        lifecycle=services.lifecycle,
        asking=services.asking,
        clock=clock,
    )


def _reads_workspaces(statement: str) -> bool:
    head = statement.lstrip().upper()
    return head.startswith("SELECT") and "FROM WORKSPACES" in head


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_ask_reads_the_agents_workspace_by_key_whatever_the_callers_workspaces(
    engine: Engine,
) -> None:
    """The reads of ``workspaces`` an ask makes are the same with 1 and with 450 of the
    caller's workspaces (the old page-by-page scan read 3 pages of 200 for 450)."""
    agents = _agent_sessions(engine)

    async def open_counting() -> list[str]:
        statements: list[str] = []

        def capture(_c: Any, _cur: Any, statement: str, *_rest: Any) -> None:
            if _reads_workspaces(statement):
                statements.append(statement)

        event.listen(engine, "before_cursor_execute", capture)
        try:
            await agents.open(
                ALICE, client_name="a", client_version="1", drafts=drafts(), context=""
            )
        finally:
            event.remove(engine, "before_cursor_execute", capture)
        return statements

    await open_counting()  # creates the workspace
    few = await open_counting()
    # Older than the agents workspace, so a walk of the caller's workspaces meets them first.
    long_ago = datetime(2000, 1, 1, tzinfo=UTC)
    with engine.begin() as connection:
        connection.execute(
            sa.insert(workspaces),
            [
                {
                    "id": f"w-{n:04d}",
                    "name": f"project {n}",
                    "owner_id": "alice",
                    "created_at": long_ago + timedelta(seconds=n),
                    "updated_at": long_ago,
                }
                for n in range(450)
            ],
        )
    many = await open_counting()
    assert len(many) == len(few) <= 2, many
    assert len(_agents_workspaces(engine, "alice")) == 1


def test_the_lookup_is_an_index_search_never_a_scan(engine: Engine) -> None:
    host = SqlHostRepository(engine, ManualClock(), UuidIds())
    host.agents_workspace("alice", AGENT_WORKSPACE_NAME)
    statements: list[tuple[str, Any]] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        if _reads_workspaces(statement):
            statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        host.agents_workspace("alice", AGENT_WORKSPACE_NAME)
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert len(statements) == 1
    sql, parameters = statements[0]
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            plan = [
                row[3]
                for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
            ]
            assert plan == [
                "SEARCH workspaces USING INDEX ix_workspaces_agents_owner (agents_owner=?)"
            ], plan
        else:
            # Whether the index CAN serve it, not what the planner picks for a tiny table.
            connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
            raw = connection.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {sql}", parameters).scalar()
            connection.rollback()
            plan = raw if isinstance(raw, list) else json.loads(str(raw))
            node = plan[0]["Plan"]
            assert node["Node Type"] in ("Index Scan", "Bitmap Heap Scan", "Index Only Scan")
            index = node.get("Index Name") or node["Plans"][0]["Index Name"]
            assert index == "ix_workspaces_agents_owner", plan
