"""Notification events carried by their transition's rows until the outbox takes them
(``clarion.adapters.sql.outbox``; issues #15 and #17), on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from clarion.adapters.sql import SqlNotificationStore, create_engine
from clarion.adapters.sql.engine import write_transaction
from clarion.adapters.sql.outbox import EVENT_BITS, take_events
from clarion.adapters.sql.schema import messages, notification_outbox
from clarion.adapters.system import UuidIds
from clarion.domain.model import ANSWERED
from clarion.domain.notifications import (
    ANSWERABLE,
    CANCELLED_EVENT,
    EXPIRED_EVENT,
    RESOLVED,
    event_key,
)
from clarion.ports.testing import ContractWorld
from clarion.ports.testing.world import claim
from tests.integration.sql.support import sql_world

BOTH = EVENT_BITS[ANSWERABLE] | EVENT_BITS[RESOLVED]


def _marks(engine: Engine, pending_id: str) -> list[int | None]:
    statement = (
        sa.select(messages.c.unannounced_events)
        .where(messages.c.bundle_pending_id == pending_id)
        .order_by(messages.c.id)
    )
    with engine.connect() as connection:
        return list(connection.execute(statement).scalars())


def _outbox_rows(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(
            connection.execute(
                sa.select(sa.func.count()).select_from(notification_outbox)
            ).scalar_one()
        )


def _store(engine: Engine, world: ContractWorld) -> SqlNotificationStore:
    return SqlNotificationStore(engine, world.clock, UuidIds())


def _events(store: SqlNotificationStore, pending_id: str) -> list[str]:
    return [entry.event for entry in store.entries(pending_id) if not entry.route_id]


def test_a_claim_leaves_its_event_on_its_rows_in_its_own_statement(engine: Engine) -> None:
    """The claim writes nothing but its rows (P1): its ``resolved`` waits there, beside the
    create's ``answerable``, until the outbox takes both."""
    world = sql_world(engine)
    world.bundle_in_new_session("p-1", questions=2)
    result = claim(world, "p-1")
    assert _marks(engine, "p-1") == [BOTH, BOTH]
    assert _outbox_rows(engine) == 0

    entries = _store(engine, world).entries("p-1")

    assert [(e.event, e.idempotency_key) for e in entries] == [
        (ANSWERABLE, event_key(ANSWERABLE, "p-1", entries[0].created_at)),
        (RESOLVED, event_key(RESOLVED, "p-1", result.responded_at or entries[1].created_at)),
    ]
    assert entries[1].created_at == entries[1].due_at == result.responded_at
    assert _marks(engine, "p-1") == [None, None]


def test_events_outlive_the_process_that_caused_them(engine: Engine) -> None:
    """Nothing is held in memory: another pool (another process) takes them later."""
    world = sql_world(engine)
    world.bundle_in_new_session("p-1")
    claim(world, "p-1")
    other = create_engine(engine.url)
    try:
        assert _events(SqlNotificationStore(other, world.clock, UuidIds()), "p-1") == [
            ANSWERABLE,
            RESOLVED,
        ]
    finally:
        other.dispose()


def test_the_workers_round_takes_the_events_before_it_hands_out_due_entries(
    engine: Engine,
) -> None:
    world = sql_world(engine)
    world.bundle_in_new_session("p-1")
    store = _store(engine, world)
    (entry,) = store.claim_due(world.clock.peek(), limit=10, lease_s=60)
    assert (entry.event, entry.pending_id) == (ANSWERABLE, "p-1")
    assert _marks(engine, "p-1") == [None]


def test_a_resolution_rolled_back_before_the_outbox_took_it_is_never_announced(
    engine: Engine,
) -> None:
    world = sql_world(engine)
    world.bundle_in_new_session("p-1")
    first = claim(world, "p-1")
    assert world.claims.restore_active_bundle("p-1", ANSWERED, first.claimed_ids)
    assert _events(_store(engine, world), "p-1") == [ANSWERABLE]


def test_a_resolution_taken_before_its_roll_back_stays_and_the_next_one_joins_it(
    engine: Engine,
) -> None:
    """Each claim is its own occurrence (the worker then drops the rolled-back one's
    deliveries as superseded)."""
    world = sql_world(engine)
    world.bundle_in_new_session("p-1")
    store = _store(engine, world)
    first = claim(world, "p-1")
    assert _events(store, "p-1") == [ANSWERABLE, RESOLVED]
    assert world.claims.restore_active_bundle("p-1", ANSWERED, first.claimed_ids)
    world.clock.advance(timedelta(seconds=1))
    second = claim(world, "p-1")
    resolved = [e for e in store.entries("p-1") if e.event == RESOLVED]
    assert [e.created_at for e in resolved] == [first.responded_at, second.responded_at]


def test_expiry_and_cancel_leave_their_event_at_their_own_time(engine: Engine) -> None:
    world = sql_world(engine)
    expiring = world.bundle_in_new_session("p-1")
    cancelled = world.bundle_in_new_session("p-2")
    (expired,) = world.claims.expire_active_bundle(expiring.session_id, "p-1")
    (ended,) = world.claims.cancel_active_bundle(cancelled.session_id, "p-2")
    store = _store(engine, world)
    assert [(e.event, e.created_at) for e in store.entries("p-1")][1:] == [
        (EXPIRED_EVENT, expired.updated_at)
    ]
    assert [(e.event, e.created_at) for e in store.entries("p-2")][1:] == [
        (CANCELLED_EVENT, ended.updated_at)
    ]


def test_a_bundle_taken_over_several_rounds_gives_each_event_once(engine: Engine) -> None:
    """A round that stops inside a bundle (its row limit, or rows another transaction holds)
    leaves the rest for a later round; the occurrence keys make the repeats no-ops."""
    world = sql_world(engine)
    world.bundle_in_new_session("p-1", questions=3)
    claim(world, "p-1")
    for _ in range(3):
        with write_transaction(engine) as connection:
            assert take_events(connection, limit=1) == 1
    with write_transaction(engine) as connection:
        assert take_events(connection, limit=1) == 0
    assert _events(_store(engine, world), "p-1") == [ANSWERABLE, RESOLVED]


def test_concurrent_takers_and_claims_record_every_event_exactly_once(engine: Engine) -> None:
    """Claims race several takers (PostgreSQL: rows held by one are skipped by the others,
    never waited on): every bundle ends with one ``answerable`` and one ``resolved``."""
    world = sql_world(engine)
    pending_ids = [f"p-{n}" for n in range(40)]
    for pending_id in pending_ids:
        world.bundle_in_new_session(pending_id, questions=2)
    done = threading.Event()
    errors: list[BaseException] = []

    def take() -> None:
        try:
            while not done.is_set():
                with write_transaction(engine) as connection:
                    take_events(connection, limit=3)
        except BaseException as exc:  # noqa: BLE001 - a thread's top level; re-raised below
            errors.append(exc)

    takers = [threading.Thread(target=take) for _ in range(3)]
    for taker in takers:
        taker.start()
    try:
        for pending_id in pending_ids:
            assert claim(world, pending_id).claimed
    finally:
        done.set()
        for taker in takers:
            taker.join(timeout=60)
    assert not errors
    entries = _store(engine, world).entries()
    counts = Counter((e.pending_id, e.event) for e in entries if not e.route_id)
    assert counts == Counter({(p, e): 1 for p in pending_ids for e in (ANSWERABLE, RESOLVED)})
