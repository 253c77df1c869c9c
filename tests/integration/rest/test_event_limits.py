"""Issue #14: event streams are bounded per identity, cost one authorization per identity per
event however many streams it holds, and end once their credential stops authenticating."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from clarion.app.usecases.auth import hash_credential
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.domain.limits import Limits
from clarion.domain.model import Identity
from clarion.ports.events import Event
from clarion.ports.host import HostRepository
from tests.integration.rest.harness import (
    Caller,
    Headers,
    Ports,
    RestWorld,
    asetup_caller,
    async_client,
    memory_ports,
    sql_ports,
)
from tests.integration.rest.test_events import Stream, open_stream
from tests.integration.sql.support import migrated_postgres_engine, migrated_sqlite_engine

STREAMS = 500
# Long enough that 500 streams' heartbeats cost little while the test runs; a revoked token
# still ends them within one heartbeat.
HEARTBEAT_S = 2.0
# Generous: the machine is shared (the measured times are printed, never asserted).
DELIVERY_BOUND_S = 30.0
TOO_MANY = (
    f"too many event streams: the limit is {STREAMS} per identity (CLARION_MAX_EVENT_STREAMS)"
)


class _CountingAuthorizer(HostTaskAuthorizer):
    """The default authorizer, recording every task it is asked about."""

    def __init__(self, host: HostRepository) -> None:
        super().__init__(host)
        self.authorizations: list[tuple[Identity, str]] = []

    def authorize_task(self, identity: Identity, task_id: str) -> None:
        self.authorizations.append((identity, task_id))
        super().authorize_task(identity, task_id)


@pytest.fixture(
    name="ports",
    params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def fixture_ports(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ports]:
    """The stores the streams' credentials and events are checked against: memory, a SQLite
    file, a PostgreSQL database (issue #14: every check on both databases)."""
    if request.param == "memory":
        yield memory_ports()
    elif request.param == "sqlite":
        with migrated_sqlite_engine(tmp_path) as engine:
            yield sql_ports(engine)
    else:
        server_url = request.getfixturevalue("postgres_server_url")
        with migrated_postgres_engine(server_url) as engine:
            yield sql_ports(engine)


def _revoke(world: RestWorld, headers: Headers) -> None:
    token = headers["Authorization"].removeprefix("Bearer ")
    record = world.ports.tokens.find_token(hash_credential(token))
    assert record is not None
    assert world.authentication.revoke_token(record.id)


async def _refused_body(world: RestWorld, headers: Headers) -> tuple[int, Any]:
    async with open_stream(world.app, headers) as (stream, _):
        assert await stream.frame() == ""
        assert stream.start is not None
        return stream.start["status"], json.loads(stream.buffer)


@pytest.mark.slow  # 500 streams: seconds of CPU, so make quick leaves it to make test
@pytest.mark.anyio
async def test_500_streams_of_one_identity_get_each_event_the_cap_refuses_the_next_and_a_revoked_token_ends_them(  # noqa: E501
    ports: Ports, request: pytest.FixtureRequest
) -> None:
    """Issue #14 on memory, SQLite and PostgreSQL: one event reaches 500 streams of one
    identity for one authorization of its task (visibility is computed once per identity per
    event, not per stream, whatever the store), the cap refuses the 501st, and revoking the
    token ends all 500."""
    store = request.node.callspec.params["ports"]
    authorizer = _CountingAuthorizer(ports.host)
    world = RestWorld.build(
        auth_enabled=True,
        heartbeat_s=HEARTBEAT_S,
        limits=Limits(max_event_streams=STREAMS),
        ports=ports,
        authorizer=authorizer,
    )
    authorizations = authorizer.authorizations
    async with async_client(world.app) as client:
        alice: Caller = await asetup_caller(client, world, "alice")
        carol: Caller = await asetup_caller(client, world, "carol")
    streams: list[Stream] = []
    with anyio.fail_after(120):
        async with AsyncExitStack() as stack:
            started = time.perf_counter()
            for _ in range(STREAMS):
                stream, _disconnect = await stack.enter_async_context(
                    open_stream(world.app, alice.headers)
                )
                assert await stream.frame() == ": connected"
                streams.append(stream)
            opened = time.perf_counter() - started
            print(f"\n[{store}] {STREAMS} streams of one identity opened in {opened:.3f} s")
            assert world.app.state.rest.events.open_streams(Identity.user(alice.user_id)) == STREAMS

            # One new event reaches every stream, for one authorization of alice's task.
            authorizations.clear()
            started = time.perf_counter()
            world.bus.publish(
                Event(
                    kind="bundle.created",
                    task_id=alice.task_id,
                    session_id=alice.session_id,
                    pending_id="p-500",
                )
            )
            with anyio.fail_after(DELIVERY_BOUND_S):
                for stream in streams:
                    kind, payload = await stream.event()
                    assert (kind, payload["pending_id"]) == ("bundle.created", "p-500")
            elapsed = time.perf_counter() - started
            print(f"[{store}] one event reached all {STREAMS} streams in {elapsed:.3f} s")
            assert [task for _, task in authorizations] == [alice.task_id]

            # An event alice may not see is authorized once too, and reaches none of them:
            # each stream's next event is the visible one published after it. (The second
            # event of alice's task may reuse the first's answer, kept for one heartbeat.)
            for task_id, session_id, pending_id in (
                (carol.task_id, carol.session_id, "p-carol"),
                (alice.task_id, alice.session_id, "p-501"),
            ):
                world.bus.publish(
                    Event(
                        kind="bundle.created",
                        task_id=task_id,
                        session_id=session_id,
                        pending_id=pending_id,
                    )
                )
            with anyio.fail_after(DELIVERY_BOUND_S):
                for stream in streams:
                    _, payload = await stream.event()
                    assert payload["pending_id"] == "p-501"
            tasks = [task for _, task in authorizations]
            assert tasks.count(carol.task_id) == 1
            assert len(tasks) <= 3  # at most one per event, for all 500 streams

            # The cap refuses the next stream of this identity, and only of this identity.
            assert await _refused_body(world, alice.headers) == (429, {"error": TOO_MANY})
            _, bob_headers = world.bearer("bob")
            async with open_stream(world.app, bob_headers) as (bobs, _):
                assert await bobs.frame() == ": connected"

            # Revoking the token ends all 500 streams (within one heartbeat each; bounded here
            # generously, never timed).
            _revoke(world, alice.headers)
            started = time.perf_counter()
            with anyio.fail_after(DELIVERY_BOUND_S):
                for stream in streams:
                    while await stream.frame():
                        pass
                    assert stream.ended
            ended = time.perf_counter() - started
            print(f"[{store}] all {STREAMS} streams ended {ended:.3f} s after the revoke")
    assert world.app.state.rest.events.open_streams(Identity.user(alice.user_id)) == 0
    async with open_stream(world.app, alice.headers) as (stream, _):
        assert await stream.frame() == ""
        assert stream.start is not None
        assert stream.start["status"] == 401


@pytest.mark.anyio
async def test_logging_out_ends_the_browser_sessions_stream(ports: Ports) -> None:
    world = RestWorld.build(auth_enabled=True, heartbeat_s=0.05, ports=ports)
    _, headers = world.bearer("alice")
    token = headers["Authorization"].removeprefix("Bearer ")
    async with async_client(world.app) as client:
        login = await client.post("/api/v1/auth/login", json={"token": token})
        assert login.status_code == 200
        cookie = f"clarion_session={login.cookies['clarion_session']}"
        csrf = login.json()["csrf_token"]
        with anyio.fail_after(10):
            async with open_stream(world.app, {"Cookie": cookie}) as (stream, _):
                assert await stream.frame() == ": connected"
                logout = await client.post(
                    "/api/v1/auth/logout", headers={"Cookie": cookie, "X-CSRF-Token": csrf}
                )
                assert logout.status_code == 200
                while await stream.frame():
                    pass
                assert stream.ended


@pytest.mark.anyio
async def test_a_stream_whose_credential_stays_valid_keeps_flowing_past_many_heartbeats() -> None:
    world = RestWorld.build(auth_enabled=True, heartbeat_s=0.02)
    async with async_client(world.app) as client:
        alice = await asetup_caller(client, world, "alice")
    with anyio.fail_after(10):
        async with open_stream(world.app, alice.headers) as (stream, _):
            assert await stream.frame() == ": connected"
            for _ in range(10):
                assert await stream.frame() == ": heartbeat"
            world.bus.publish(
                Event(kind="bundle.created", task_id=alice.task_id, session_id=alice.session_id)
            )
            while (frame := await stream.frame()) == ": heartbeat":
                pass
            assert frame.startswith("event: bundle.created")


@pytest.mark.anyio
async def test_a_stream_ends_once_its_token_expires(ports: Ports) -> None:
    world = RestWorld.build(auth_enabled=True, heartbeat_s=0.05, ports=ports)
    user = world.authentication.create_user("alice")
    expires_at = datetime.now(UTC) + timedelta(seconds=1)
    issued = world.authentication.issue_token(user.id, expires_at=expires_at)
    headers = {"Authorization": f"Bearer {issued.token}"}
    with anyio.fail_after(20):
        async with open_stream(world.app, headers) as (stream, _):
            assert await stream.frame() == ": connected"
            while await stream.frame():
                pass
            assert stream.ended
    assert datetime.now(UTC) >= expires_at
