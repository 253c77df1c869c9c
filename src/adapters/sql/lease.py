"""A serving process's liveness lease on PostgreSQL (issue #28): the
:class:`clarion.ports.ProcessLease` recovery asks whether a delivery's process is gone.

The lease is a session-level advisory lock ``(LEASE_CLASS, key)`` — the two-integer form, a
lock space apart from the one-bigint session locks of :mod:`clarion.adapters.sql.locks` —
taken with ``pg_try_advisory_lock`` under a random positive ``key`` on a connection of its
own, outside the engine's pool, held for the process's lifetime. The lock vanishes exactly when
that connection ends: at once when the process exits or is killed (``kill -9`` closes its
socket), and after the TCP keepalives (:mod:`clarion.adapters.keepalives`) when its host
vanishes. Its process id is ``str(key)``; the claim records it
(``task_session_messages.delivery_process``), and
:meth:`PostgresLease.gone` reads ``pg_locks`` for the keys still held in this database.

:meth:`PostgresLease.renew` checks the connection and, when it was lost, takes the same key
again on a new one (a new key only when another process holds it meanwhile). While the
connection is lost the process's deliveries look gone to the other replicas and may be rolled
back — as if it had crashed: the answer is never lost, the bundle is answerable again.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Collection
from typing import Final

import sqlalchemy as sa
import structlog
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from clarion.adapters.keepalives import KEEPALIVES

log = structlog.get_logger(__name__)

LEASE_CLASS: Final = 0x436C6172  # "Clar": the first key of every lease's advisory lock
APPLICATION_NAME: Final = "clarion-lease"
CONNECT_TIMEOUT_S: Final = 5
_ATTEMPTS: Final = 8  # random keys tried before giving up (each collides with odds ~n/2^31)

_TAKE = sa.text("SELECT pg_try_advisory_lock(CAST(:class_id AS integer), CAST(:key AS integer))")
_UNLOCK = sa.text("SELECT pg_advisory_unlock(CAST(:class_id AS integer), CAST(:key AS integer))")
_CHECK = sa.text("SELECT 1")
_HELD = sa.text(
    "SELECT objid::bigint FROM pg_locks"
    " WHERE locktype = 'advisory' AND granted AND objsubid = 2"
    " AND classid::bigint = :class_id"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


class LeaseUnavailable(RuntimeError):
    """No lease key could be taken (every key tried is held by another process)."""


def _new_key() -> int:
    return secrets.randbelow(2**31 - 1) + 1


class PostgresLease:
    """This process's lease on ``engine``'s PostgreSQL database (see the module docstring).

    Nothing connects until :meth:`acquire`; :meth:`release` ends it. Thread-safe.
    """

    def __init__(self, engine: Engine) -> None:
        if engine.dialect.name != "postgresql":
            raise ValueError("a PostgresLease needs a PostgreSQL engine")
        self._engine = engine
        self._holder = sa.create_engine(
            engine.url,
            poolclass=NullPool,
            hide_parameters=True,
            isolation_level="AUTOCOMMIT",
            connect_args={
                "connect_timeout": CONNECT_TIMEOUT_S,
                "application_name": APPLICATION_NAME,
                **KEEPALIVES,
            },
        )
        self._lock = threading.Lock()
        self._connection: Connection | None = None
        self._key: int | None = None
        self._held: str | None = None  # read without the lock: a claim never waits on renew

    @property
    def process_id(self) -> str | None:
        return self._held

    def acquire(self) -> str:
        """Take the lease (idempotent); returns the process id.

        Raises:
            LeaseUnavailable: every key tried was held.
            sqlalchemy.exc.DBAPIError: the database is unreachable.
        """
        with self._lock:
            if self._connection is None:
                self._take(self._key)
            return str(self._key)

    def renew(self) -> bool:
        """Whether the lease was still held; when its connection was lost, take it again
        (the same key when free) before returning False.

        Raises:
            sqlalchemy.exc.DBAPIError: the lease was lost and the database is unreachable
                (the next renew tries again; meanwhile claims record no process).
            LeaseUnavailable: the lease was lost and no key could be taken again.
        """
        with self._lock:
            if self._connection is not None:
                try:
                    self._connection.execute(_CHECK)
                except DBAPIError:
                    self._drop()
                else:
                    return True
            lost = self._key
            self._take(lost)
            log.warning("lease.retaken", lost=str(lost), process_id=str(self._key))
            return False

    def release(self) -> None:
        """End the lease: its deliveries become recoverable at once by other replicas."""
        with self._lock:
            # Unlocked before the connection closes: a closed socket's backend exits (and frees
            # the lock) only a moment later, and other replicas must see the lease gone at once.
            if self._connection is not None and self._key is not None:
                try:
                    self._connection.execute(_UNLOCK, {"class_id": LEASE_CLASS, "key": self._key})
                except SQLAlchemyError as exc:  # a lost connection: the session is gone anyway
                    log.debug("lease.unlock_failed", error=type(exc).__qualname__)
            self._drop()
            self._holder.dispose()

    def gone(self, process_ids: Collection[str]) -> frozenset[str]:
        """Of ``process_ids``, the lease keys no session of this database holds. An id that is
        not a lease key this class would take is never reported gone."""
        keys = {pid: int(pid) for pid in process_ids if pid.isdigit() and 0 < int(pid) < 2**31}
        if not keys:
            return frozenset()
        with self._engine.connect() as connection:
            held = set(connection.execute(_HELD, {"class_id": LEASE_CLASS}).scalars())
        return frozenset(pid for pid, key in keys.items() if key not in held)

    def _take(self, preferred: int | None) -> None:
        connection = self._holder.connect()
        try:
            candidates = [preferred] if preferred is not None else []
            candidates += [_new_key() for _ in range(_ATTEMPTS)]
            for key in candidates:
                taken = connection.execute(_TAKE, {"class_id": LEASE_CLASS, "key": key})
                if taken.scalar_one():
                    self._connection, self._key, self._held = connection, key, str(key)
                    log.info("lease.held", process_id=str(key))
                    return
        except BaseException:
            connection.close()
            raise
        connection.close()
        raise LeaseUnavailable(f"no free liveness lease key (tried {len(candidates)})")

    def _drop(self) -> None:
        self._held = None
        if self._connection is not None:
            connection, self._connection = self._connection, None
            try:
                connection.close()
            except DBAPIError as exc:  # its session is gone either way
                log.debug("lease.close_failed", error=type(exc).__qualname__)


def lease_for(engine: Engine) -> PostgresLease | None:
    """The lease a serving process takes on ``engine``: PostgreSQL only (one SQLite file is
    served by one process, whose recovery at start-up needs none)."""
    return PostgresLease(engine) if engine.dialect.name == "postgresql" else None


__all__ = ["LEASE_CLASS", "LeaseUnavailable", "PostgresLease", "lease_for"]
