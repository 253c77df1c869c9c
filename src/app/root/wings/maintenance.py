"""Start-up's storage step and the maintenance that runs while serving: the SQLite file's
lock and the migrations, the PostgreSQL liveness lease, recovery of interrupted deliveries
(once, or in rounds when other processes share the database) and the purge of ended browser
sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta

import anyio
import structlog

from clarion.adapters.sql import PostgresLease
from clarion.app.root.settings import Settings
from clarion.app.root.storage import Startup, Storage
from clarion.app.root.wings import Wing
from clarion.app.usecases.auth import Authentication
from clarion.app.usecases.lifecycle import Lifecycle
from clarion.app.usecases.runner import Runner
from clarion.app.usecases.services import Services
from clarion.domain.errors import ClarionError, failure_fields
from clarion.ports.system import Clock

log = structlog.get_logger(__name__)

# Ended and expired browser sessions are deleted at start-up, at every login, and this often.
SESSION_PURGE_INTERVAL_S = 3600.0


def storage_wing(startup: Startup, *, noted: Callable[[], None]) -> Wing:
    """Start-up's first step: the SQLite file's lock, then the schema is current before
    anything reads or writes; then ``noted`` (notes only once the configuration has proved
    usable, #30); then the lease. The lifespan owns the engine: its pool is released when
    serving ends (the engine stays usable, so ``Clarion.close()`` afterwards is harmless)."""
    storage = startup.storage

    @asynccontextmanager
    async def started() -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            # Before serving, so outside the Runner: nothing else is running yet.
            await anyio.to_thread.run_sync(startup.upgrade)
            noted()
            if storage.engine is not None:
                stack.callback(storage.engine.dispose)
            if storage.lease is not None:
                # Held before anything is claimed, released when serving has ended: while it
                # is held, other replicas leave this process's deliveries to it (issue #28).
                await anyio.to_thread.run_sync(storage.lease.acquire)
                stack.callback(storage.lease.release)
            yield

    return Wing(contexts=(started,))


def maintenance_wing(
    settings: Settings,
    storage: Storage,
    services: Services,
    authentication: Authentication,
    runner: Runner,
) -> Wing:
    """Recovery at start-up (and, on a shared database, every ``recovery_interval_s``) and
    the purge of ended browser sessions (at start-up, then every hour)."""
    lifecycle, recovers_at_once = services.lifecycle, storage.recovers_at_once
    recovery = Recovery(settings, lifecycle, services.clock, storage.lease)

    @asynccontextmanager
    async def recovered() -> AsyncIterator[None]:
        if recovers_at_once:
            # In memory, or SQLite under its file lock: no other process can be delivering,
            # so recover everything now.
            await lifecycle.reconcile_on_startup()
        else:
            # PostgreSQL: other processes may share the database, so recover the deliveries
            # of processes that are gone and those older than any in flight, and keep doing
            # so, since a process that dies leaves markers nobody else would clear.
            await recovery.recover()
        await purge_sessions(authentication, runner)
        yield

    async def keep_purging() -> None:
        while True:
            await anyio.sleep(SESSION_PURGE_INTERVAL_S)
            await purge_sessions(authentication, runner)

    tasks = (keep_purging,) if recovers_at_once else (recovery.keep_recovering, keep_purging)
    return Wing(contexts=(recovered,), tasks=tasks)


class Recovery:
    """Recovery of the deliveries interrupted on a shared database (issue #28)."""

    def __init__(
        self, settings: Settings, lifecycle: Lifecycle, clock: Clock, lease: PostgresLease | None
    ) -> None:
        self._settings = settings
        self._lifecycle = lifecycle
        self._clock = clock
        self._lease = lease

    async def recover(self) -> None:
        # The grace is longer than any delivery can take (the resume wait is bounded at 30 s,
        # live delivery at 35 s), so no process rolls back a delivery another live one is
        # still making; a delivery whose process is gone (its lease is free) is rolled back
        # at once (issue #28).
        grace = timedelta(seconds=self._settings.recovery_grace_s)
        await self._lifecycle.reconcile_on_startup(self._clock.now() - grace)

    async def keep_recovering(self) -> None:
        """Every ``recovery_interval_s``: renew this process's lease, then recover (one
        indexed read when nothing is in delivery). A failure is logged and the next round
        retries."""
        while True:
            await anyio.sleep(self._settings.recovery_interval_s)
            if self._lease is not None:
                try:
                    # Not through the Runner: with every worker thread busy the renewal
                    # would queue behind them, and a late renewal lets other replicas take
                    # this process's deliveries over while it is alive.
                    await anyio.to_thread.run_sync(self._lease.renew)
                except Exception as exc:  # noqa: BLE001 - the database is away: the next round retries
                    log.warning("lease.renew_failed", **failure_fields(exc))
            try:
                await self.recover()
            except ClarionError as exc:
                log.warning("recovery.failed", **failure_fields(exc))  # the next round retries


async def purge_sessions(authentication: Authentication, runner: Runner) -> None:
    """Delete the browser sessions that can never authenticate again; a failure is logged
    and the next round retries."""
    try:
        purged = await runner.guarded(
            "failed to purge login sessions", authentication.purge_sessions
        )
    except ClarionError:
        log.warning("sessions.purge_failed", exc_info=True)
        return
    if purged:
        log.info("sessions.purged", count=purged)
