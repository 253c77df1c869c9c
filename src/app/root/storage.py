"""The storage provider: the one place that opens Clarion's stores and owns their lifetime.

:func:`open_storage` turns ``settings.database_url`` into a :class:`Storage` (nothing is
connected, created or migrated there); ``clarion serve`` builds on it through
:func:`~clarion.app.root.compose.build_clarion`, whose start-up step locks and migrates, and
every administrative command (``clarion db upgrade``, ``users``, ``tokens``, ``notify``,
``audit export``) opens it with :func:`opened_storage`, which migrates, yields and closes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import attrs
import structlog
from sqlalchemy.engine import Engine

from clarion.adapters.memory import (
    InMemoryAnswerLinkStore,
    InMemoryAskRecords,
    InMemoryClaimRepository,
    InMemoryGroupDirectory,
    InMemoryHostRepository,
    InMemoryNotificationStore,
    InMemoryStandingApprovals,
    InMemoryStore,
    InMemoryTokenStore,
)
from clarion.adapters.sql import (
    PostgresLease,
    SqlAnswerLinkStore,
    SqlAskRecords,
    SqlClaimRepository,
    SqlGroupDirectory,
    SqlHostRepository,
    SqlNotificationStore,
    SqlStandingApprovals,
    SqlTokenStore,
    autovacuum_disabled,
    create_engine,
    database_probe,
    hold_sqlite_file,
    lease_for,
    release_sqlite_file,
    upgrade_database,
)
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.root.settings import Settings
from clarion.ports.answer_links import AnswerLinkStore
from clarion.ports.approvals import GroupDirectory, StandingApprovals
from clarion.ports.asks import AskRecords
from clarion.ports.claims import ClaimRepository
from clarion.ports.host import HostRepository
from clarion.ports.notifications import NotificationStore
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.tokens import TokenStore

MEMORY_URL: Final = "memory://"
AUTOVACUUM_ADVICE: Final = (
    "PostgreSQL will not gather planner statistics for Clarion's tables (autovacuum is off); "
    "without them a claim may read every pending question instead of one. Turn autovacuum "
    "on, or run ANALYZE regularly (docs/operations.md, PostgreSQL)."
)

log = structlog.get_logger(__name__)


@attrs.frozen
class Storage:
    """Persistence as one unit: the claims, host records, tokens and used answer links that
    share a store.

    Build one with :meth:`in_memory` or :meth:`sql` (on an engine you created and own), or
    from your own repositories, and pass it as ``build_clarion(storage=...)``; Clarion then
    opens no database of its own. ``engine`` (when the repositories are SQL) is the database
    live delivery and start-up recovery look at, and whose schema :meth:`upgrade` migrates;
    ``lock_file`` is the SQLite file whose lock :meth:`Clarion.upgrade` takes at start-up.
    Without ``answer_links`` the uses of answer links are kept in memory (a link could then
    answer again after a restart, though its bundle is resolved by then).
    """

    claims: ClaimRepository
    host: HostRepository
    tokens: TokenStore
    answer_links: AnswerLinkStore | None = None
    # Routes and the outbox ``claims`` records events in (None: no notifications).
    notifications: NotificationStore | None = None
    # Agents' asks (issue #28: retries, MCP tasks, late answers); None: kept in memory.
    asks: AskRecords | None = None
    label: str = "provided by the host"
    engine: Engine | None = None
    check: Callable[[], object] | None = None  # the health probe (``/healthz``)
    # The SQLite file held (locked) while this service serves: one process per file.
    lock_file: str | None = None
    close_probe: Callable[[], None] | None = None  # releases the health probe's engine
    # PostgreSQL: this process's liveness lease (issue #28), which ``claims`` records with each
    # claim; the lifespan takes it before serving and renews it with every recovery round.
    lease: PostgresLease | None = None
    # Issue #33: the groups approvals are assigned to, and standing approvals (None: neither
    # is kept — no groups, no standing approvals).
    groups: GroupDirectory | None = None
    standing: StandingApprovals | None = None

    @classmethod
    def in_memory(cls, clock: Clock, ids: IdGenerator) -> Storage:
        """Everything in one process's memory; nothing is kept."""
        store = InMemoryStore()
        return cls(
            claims=InMemoryClaimRepository(store, clock, ids),
            host=InMemoryHostRepository(store, clock, ids),
            tokens=InMemoryTokenStore(store, clock, ids),
            answer_links=InMemoryAnswerLinkStore(),
            notifications=InMemoryNotificationStore(store, clock, ids),
            asks=InMemoryAskRecords(store),
            label="in memory (nothing is kept)",
            groups=InMemoryGroupDirectory(store, clock, ids),
            standing=InMemoryStandingApprovals(store),
        )

    @classmethod
    def sql(
        cls, engine: Engine, clock: Clock, ids: IdGenerator, *, lock_file: str | None = None
    ) -> Storage:
        """Clarion's SQL repositories on ``engine`` (SQLite or PostgreSQL), with a health
        probe of its own. The schema is migrated by :meth:`upgrade`, not here."""
        check, close_probe = database_probe(engine)
        lease = lease_for(engine)
        return cls(
            claims=SqlClaimRepository(engine, clock, ids, lease=lease),
            host=SqlHostRepository(engine, clock, ids),
            tokens=SqlTokenStore(engine, clock, ids),
            answer_links=SqlAnswerLinkStore(engine),
            notifications=SqlNotificationStore(engine, clock, ids),
            asks=SqlAskRecords(engine),
            label=engine.url.render_as_string(hide_password=True),
            engine=engine,
            check=check,
            lock_file=lock_file,
            close_probe=close_probe,
            lease=lease,
            groups=SqlGroupDirectory(engine, clock, ids),
            standing=SqlStandingApprovals(engine),
        )

    @property
    def recovers_at_once(self) -> bool:
        """No other process can be delivering: no shared database, or SQLite under its file
        lock."""
        return self.engine is None or self.lock_file is not None

    def upgrade(self) -> str | None:
        """Apply the database migrations (idempotent; nothing to do without an engine) and
        return the revision reached (None without an engine). The ASGI lifespan calls it
        first; call it yourself to use the services without one."""
        if self.engine is None:
            return None
        return upgrade_database(self.engine)

    def close(self) -> None:
        """Release the engine's pool and the health probe's engine (both stay usable: a
        later use connects again)."""
        if self.engine is not None:
            self.engine.dispose()
        if self.close_probe is not None:
            self.close_probe()


def open_storage(settings: Settings, clock: Clock, ids: IdGenerator) -> Storage:
    """The storage ``settings.database_url`` names. Nothing is connected, created or migrated
    here (the engine connects on first use); :meth:`Startup.upgrade` does that at start-up, on
    SQLite after taking the file's lock."""
    if settings.database_url == MEMORY_URL:
        return Storage.in_memory(clock, ids)
    engine = create_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    lock_file = engine.url.database if engine.dialect.name == "sqlite" else None
    return Storage.sql(engine, clock, ids, lock_file=lock_file)


@contextmanager
def opened_storage(settings: Settings) -> Iterator[Storage]:
    """The storage of a short administrative command, migrated to the current schema and
    closed afterwards. It neither serves nor recovers, so it takes no SQLite file lock and may
    run next to the serving process."""
    storage = open_storage(settings, SystemClock(), UuidIds())
    try:
        storage.upgrade()
        yield storage
    finally:
        storage.close()


@attrs.define
class Startup:
    """Start-up's storage step, once: on a SQLite file, take its lock (one serving process
    per file), then migrate (and warn when PostgreSQL gathers no planner statistics);
    :meth:`close` releases the engine and the lock."""

    storage: Storage
    _lock: Path | None = attrs.field(default=None, init=False)
    _upgraded: bool = attrs.field(default=False, init=False)

    def upgrade(self) -> None:
        """Idempotent.

        Raises:
            DatabaseInUse: another process holds the SQLite file.
        """
        if self._upgraded:
            return
        if self.storage.lock_file is not None and self._lock is None:
            self._lock = hold_sqlite_file(self.storage.lock_file)  # before anything writes
        self.storage.upgrade()
        self._upgraded = True
        engine = self.storage.engine
        if engine is not None and autovacuum_disabled(engine):
            log.warning("database.autovacuum_off", advice=AUTOVACUUM_ADVICE)

    def close(self) -> None:
        self.storage.close()
        if self._lock is not None:
            release_sqlite_file(self._lock)
            self._lock = None
