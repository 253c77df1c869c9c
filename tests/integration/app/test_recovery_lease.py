"""Issue #28 item 4: a serving process on PostgreSQL holds its liveness lease from start-up
until serving ends, takes it again when its connection is lost, and records it with its claims;
SQLite and in-memory storage take none."""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa
from starlette.testclient import TestClient

from clarion.adapters.sql import PostgresLease, create_engine
from clarion.adapters.system import UuidIds
from clarion.app.root.compose import Storage, build_clarion
from clarion.app.root.settings import Settings
from clarion.ports.testing import ManualClock

QUESTION = {
    "id": "go",
    "title": "Go",
    "prompt": "Go ahead?",
    "options": [{"label": "Yes", "description": "go"}, {"label": "No", "description": "stop"}],
}


def _wait_for(condition: object, limit_s: float = 30.0) -> bool:
    assert callable(condition)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_serving_on_postgresql_holds_the_lease_records_it_and_releases_it_at_the_end(
    postgres_database_url: str,
) -> None:
    """#28 item 4: held while serving (another process sees it alive), written by the claim,
    dropped with the marker, and free (the process "gone") once serving ended."""
    settings = Settings(database_url=postgres_database_url, live_delivery="memory")
    clarion = build_clarion(settings)
    lease = clarion.storage.lease
    assert lease is not None
    unbuilt = lease.process_id
    assert unbuilt is None  # building connects nothing
    assert clarion.engine is not None
    other = PostgresLease(clarion.engine)
    try:
        with TestClient(clarion.asgi_app, base_url="http://127.0.0.1") as client:
            process_id = lease.process_id
            assert process_id is not None
            assert other.gone({process_id}) == frozenset()
            task = client.post("/api/v1/tasks", json={"title": "t"}).json()
            session = client.post(f"/api/v1/tasks/{task['id']}/sessions", json={}).json()
            asked = {"session_id": session["id"], "context": "", "questions": [QUESTION]}
            pending_id = client.post("/api/v1/clarification/request", json=asked).json()[
                "pending_id"
            ]
            won = clarion.storage.claims.complete_active_bundle(pending_id, "rejected", None)
            assert won.claimed
            recorded = sa.text("SELECT delivery_process FROM task_session_messages WHERE id = :id")
            with clarion.engine.connect() as connection:
                stored = connection.execute(recorded, {"id": won.claimed_ids[0]}).scalar_one()
                assert stored == process_id
            clarion.storage.claims.finalize_delivery(pending_id, "rejected", won.claimed_ids)
            with clarion.engine.connect() as connection:
                stored = connection.execute(recorded, {"id": won.claimed_ids[0]}).scalar_one()
                assert stored is None
        assert lease.process_id is None
        assert other.gone({process_id}) == frozenset({process_id})
    finally:
        other.release()
        clarion.close()


def test_a_lost_lease_connection_is_taken_again_with_the_same_key(
    postgres_database_url: str,
) -> None:
    """#28 item 4: the recovery round renews the lease — its connection ended by the server,
    the process holds the same key again (so its recorded deliveries are its own again)."""
    settings = Settings(
        database_url=postgres_database_url, live_delivery="memory", recovery_interval_s=0.2
    )
    clarion = build_clarion(settings)
    lease = clarion.storage.lease
    assert lease is not None
    assert clarion.engine is not None
    other = PostgresLease(clarion.engine)
    holder = sa.text(
        "SELECT pid FROM pg_stat_activity"
        " WHERE application_name = 'clarion-lease' AND datname = current_database()"
    )
    engine = clarion.engine

    def holders() -> list[int]:
        with engine.connect() as connection:
            return list(connection.execute(holder).scalars())

    try:
        with TestClient(clarion.asgi_app, base_url="http://127.0.0.1"):
            process_id = lease.process_id
            assert process_id is not None
            [first] = holders()
            with engine.connect() as connection:
                ended = sa.text("SELECT pg_terminate_backend(:pid)")
                assert connection.execute(ended, {"pid": first}).scalar_one()
                connection.commit()
            assert _wait_for(lambda: len(found := holders()) == 1 and found[0] != first)
            assert other.gone({process_id}) == frozenset()
            assert lease.process_id == process_id
    finally:
        other.release()
        clarion.close()


def test_sqlite_and_memory_storage_take_no_lease(tmp_path: Path) -> None:
    """One SQLite file is served by one process (its recovery at start-up needs no lease)."""
    clock, ids = ManualClock(), UuidIds()
    engine = create_engine(f"sqlite:///{tmp_path / 'one.db'}")
    try:
        assert Storage.sql(engine, clock, ids).lease is None
    finally:
        engine.dispose()
    assert Storage.in_memory(clock, ids).lease is None
