"""Durability of the outbox (issue #17): a worker process killed between recording and
sending loses nothing (the notification is sent after restart, once), and two workers on one
PostgreSQL database act on each due notification, reminder and deadline exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from sqlalchemy.engine import make_url

from clarion.adapters.sql import create_engine, upgrade_database
from clarion.adapters.system import UuidIds
from clarion.app.root.compose import Storage
from clarion.domain.model import ANSWERED
from clarion.domain.notifications import ANSWERABLE, DEADLINE, DONE, DUE, REMINDER
from clarion.ports.testing import ManualClock
from tests.integration.notifications.support import NotifyWorld, notify_world
from tests.integration.sql.support import migrated_postgres_engine

pytestmark = pytest.mark.anyio

LEASE_S = 120.0  # DeliveryPolicy's default lease
HOOK = "webhook:https://hooks.example/a"

# A worker that fans an event out as the worker does — recording its delivery and taking the
# delivery's lease in the same transaction (#32) — and is killed before sending anything.
CRASHING_WORKER = textwrap.dedent(
    """
    import os, signal, sys
    from datetime import datetime, UTC
    from clarion.adapters.sql import SqlNotificationStore, create_engine
    from clarion.adapters.system import SystemClock, UuidIds
    from clarion.domain.notifications import DONE, NewEntry

    engine = create_engine(sys.argv[1])
    store = SqlNotificationStore(engine, SystemClock(), UuidIds())
    now, route_id = datetime.fromisoformat(sys.argv[2]), sys.argv[3]
    (event,) = store.claim_due(now, limit=100, lease_s=120.0)
    delivery = NewEntry(
        pending_id=event.pending_id,
        event=event.event,
        route_id=route_id,
        due_at=event.created_at,
        idempotency_key=f"{event.idempotency_key}:{route_id}:{event.event}",
        origin_key=event.idempotency_key,
    )
    taken = store.finish_and_take(
        event.id, event.lease_token, DONE, follow_ups=[delivery], now=now, lease_s=120.0
    )
    print(len(taken), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.server
async def test_a_worker_killed_between_recording_and_sending_loses_nothing(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'clarion.db'}"
    engine = create_engine(url)
    upgrade_database(engine)
    clock = ManualClock(datetime.now(UTC).replace(microsecond=0))
    world = notify_world(Storage.sql(engine, clock, UuidIds()), clock)
    try:
        route = world.route("", HOOK, events=(ANSWERABLE,))
        world.ask("")
        crashed = subprocess.run(
            [sys.executable, "-c", CRASHING_WORKER, url, clock.peek().isoformat(), route.id],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
            check=False,
        )
        assert crashed.returncode == -9, crashed.stderr
        assert crashed.stdout.strip() == "1"
        assert [e.status for e in world.entries() if e.route_id] == [DUE]
        # The dead worker's lease holds the entry: nobody sends it until the lease passes.
        await world.drain()
        assert world.channel.sent == []
        world.advance(LEASE_S + 1)
        await world.drain()
        world.advance(LEASE_S + 1)
        await world.drain()
        assert [n.event for n in world.channel.sent] == [ANSWERABLE]
        assert [e.status for e in world.entries() if e.route_id] == [DONE]
    finally:
        engine.dispose()


@pytest.mark.postgres
async def test_two_workers_on_one_postgres_act_on_each_due_entry_once(
    postgres_server_url: str,
) -> None:
    clock = ManualClock(step=timedelta(0))
    with migrated_postgres_engine(postgres_server_url) as engine:
        second_engine = create_engine(make_url(str(engine.url.render_as_string(False))))
        try:
            first = notify_world(Storage.sql(engine, clock, UuidIds()), clock)
            second = notify_world(Storage.sql(second_engine, clock, UuidIds()), clock)
            first.route(
                "",
                HOOK,
                events=(ANSWERABLE, REMINDER),
                remind_after_s=60.0,
                deadline_after_s=150.0,
                on_deadline="default:q1_opt1",
            )
            bundles = 30  # more than one batch (20), so both workers find work
            for n in range(bundles):
                first.ask("", pending_id=f"p-{n}")

            async def both(worlds: tuple[NotifyWorld, NotifyWorld]) -> None:
                async with anyio.create_task_group() as group:
                    for world in worlds:
                        group.start_soon(world.drain)

            pair = (first, second)
            await both(pair)  # fan-out, then the answerable deliveries
            await both(pair)
            clock.set(clock.peek() + timedelta(seconds=61))
            await both(pair)  # reminder 1
            clock.set(clock.peek() + timedelta(seconds=60))
            await both(pair)  # reminder 2
            clock.set(clock.peek() + timedelta(seconds=30))
            await both(pair)  # the deadlines answer every bundle
            clock.set(clock.peek() + timedelta(seconds=60))
            await both(pair)  # no reminder after the answer
            sent = first.channel.sent + second.channel.sent
            keys = Counter(n.idempotency_key for n in sent)
            assert keys.most_common(1)[0][1] == 1
            assert Counter(n.event for n in sent) == {ANSWERABLE: bundles, REMINDER: 2 * bundles}
            for n in range(bundles):
                bundle = first.clarion.storage.claims.load_bundle(f"p-{n}")
                assert bundle is not None
                assert bundle.rows[0].status == ANSWERED
            deadlines = [e for e in first.store.entries() if e.event == DEADLINE]
            assert [e.status for e in deadlines] == [DONE] * bundles
        finally:
            second_engine.dispose()
