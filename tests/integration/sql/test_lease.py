"""Issue #28 item 4: the PostgreSQL liveness lease — a session-level advisory lock on a
connection of its own — is seen alive by every other session while held, and gone the moment
its connection ends."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from clarion.adapters.sql import PostgresLease, lease_for
from clarion.adapters.sql.lease import LEASE_CLASS


@pytest.mark.postgres
def test_a_held_lease_is_alive_for_others_and_gone_once_released(postgres_engine: Engine) -> None:
    first, second = PostgresLease(postgres_engine), PostgresLease(postgres_engine)
    try:
        one, two = first.acquire(), second.acquire()
        assert one != two
        assert first.acquire() == one  # idempotent
        assert first.gone({one, two}) == frozenset()
        assert second.gone({one, two}) == frozenset()
        first.release()
        assert first.process_id is None
        assert second.gone({one, two}) == frozenset({one})
    finally:
        first.release()
        second.release()


@pytest.mark.postgres
def test_a_lease_ends_with_its_connection_and_is_taken_again_under_the_same_key(
    postgres_engine: Engine,
) -> None:
    """The server ends the lease's session (as when the process or its host dies): the lock
    is free at once; ``renew`` notices and takes the same key on a new connection."""
    lease, observer = PostgresLease(postgres_engine), PostgresLease(postgres_engine)
    terminate = sa.text(
        "SELECT pg_terminate_backend(pid) FROM pg_locks"
        " WHERE locktype = 'advisory' AND classid::bigint = :class_id"
        " AND objid::bigint = :key AND objsubid = 2"
    )
    try:
        process_id = lease.acquire()
        assert lease.renew() is True
        with postgres_engine.connect() as connection:
            params = {"class_id": LEASE_CLASS, "key": int(process_id)}
            assert connection.execute(terminate, params).scalars().all() == [True]
            connection.commit()
        # The terminated backend leaves pg_locks when it has exited.
        for _ in range(200):
            if observer.gone({process_id}):
                break
            time.sleep(0.05)
        assert observer.gone({process_id}) == frozenset({process_id})
        assert lease.renew() is False
        assert lease.process_id == process_id
        assert observer.gone({process_id}) == frozenset()
    finally:
        lease.release()
        observer.release()


@pytest.mark.postgres
def test_an_id_that_is_no_lease_key_is_never_reported_gone(postgres_engine: Engine) -> None:
    """Ids another kind of lease wrote (or none this class would take) keep the grace."""
    lease = PostgresLease(postgres_engine)
    try:
        assert lease.gone({"process-1", "0", "-5", str(2**31), ""}) == frozenset()
    finally:
        lease.release()


def test_sqlite_takes_no_lease(sqlite_engine: Engine) -> None:
    assert lease_for(sqlite_engine) is None
    with pytest.raises(ValueError, match="PostgreSQL"):
        PostgresLease(sqlite_engine)
