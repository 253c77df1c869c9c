"""The composition root: the one place that chooses concrete adapters.

``build_clarion(settings, **overrides)`` wires every port from :class:`Settings`; a host may pass
any of them instead (``storage=`` — claims, host records and tokens as one unit —,
``authorizer=``, ``waiters=``, ``dispatcher=``, ``events=``, ``clock=``, ``ids=``), and only what
was not passed is built. Nothing is built at import time, and an injected storage is not touched
while building. The database ``settings`` names is opened (locked, then migrated) by
:func:`open_storage`; an injected storage is migrated by the ASGI lifespan, which then owns the
MCP session managers, live delivery, recovery, the purge of ended browser sessions, the event
streams and the database engine's pool; :meth:`Clarion.close` releases the engine when no
lifespan ran (CLI commands, scripts).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import cast

import anyio
import attrs
import structlog
from sqlalchemy.engine import Engine
from starlette.applications import Starlette

from clarion.adapters.events import InProcessEventBus
from clarion.adapters.http_guard import HostAllowlist
from clarion.adapters.mcp import build_mcp
from clarion.adapters.memory import (
    InMemoryClaimRepository,
    InMemoryHostRepository,
    InMemoryNotificationStore,
    InMemoryStore,
    InMemoryTokenStore,
)
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.notify import AppriseNotifier, EmailNotifier, SmtpSettings, WebhookNotifier
from clarion.adapters.postgres_notify import PostgresLiveDelivery, postgres_waiters_and_events
from clarion.adapters.rest.app import create_rest_app
from clarion.adapters.resume import OutboxResumeDispatcher, WebhookResumeDispatcher
from clarion.adapters.sql import (
    SqlClaimRepository,
    SqlHostRepository,
    SqlNotificationStore,
    SqlTokenStore,
    create_engine,
    database_probe,
    hold_sqlite_file,
    release_sqlite_file,
    upgrade_database,
)
from clarion.adapters.system import SystemClock, UuidIds
from clarion.adapters.web import web_routes
from clarion.app.root.crashpoints import crashing_claims, crashing_dispatcher
from clarion.app.root.settings import Settings
from clarion.app.usecases.auth import Authentication
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.notification_routes import NotificationRouting
from clarion.app.usecases.notifications import DeliveryPolicy, NotificationWorker
from clarion.app.usecases.resolve import Resolver
from clarion.app.usecases.runner import Runner
from clarion.app.usecases.services import Services, build_services
from clarion.domain.errors import ClarionError, ValidationError, failure_fields
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.events import EventPublisher, EventSource
from clarion.ports.host import HostRepository
from clarion.ports.notifications import AnswerLinkIssuer, NotificationStore, Notifier
from clarion.ports.resume import ResumeDispatcher
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.tokens import TokenStore
from clarion.ports.waiters import Waiters

log = structlog.get_logger(__name__)

MEMORY_URL = "memory://"
# Ended and expired browser sessions are deleted at start-up, at every login, and this often.
SESSION_PURGE_INTERVAL_S = 3600.0
WORKER_THREADS = 32


@attrs.define
class Clarion:
    """A wired Clarion service.

    ``asgi_app`` serves REST, both MCP surfaces and the web inbox; ``services`` are the use
    cases (``services.resolver.resolve(identity, pending_id, outcome)`` is the spec's
    ``ResolveBundle``); ``authentication`` issues users and personal access tokens.
    """

    settings: Settings
    services: Services
    authentication: Authentication
    asgi_app: Starlette
    storage: Storage
    # The notification worker and route management (None: the storage keeps no outbox).
    notifications: NotificationWorker | None = None
    notification_routes: NotificationRouting | None = None
    _lock_released: bool = attrs.field(default=False, init=False)

    @property
    def database_label(self) -> str:
        return self.storage.label

    @property
    def engine(self) -> Engine | None:
        return self.storage.engine

    def upgrade(self) -> None:
        """Migrate the database to the current schema — what the ASGI lifespan does first.
        Call it before using :attr:`services` or :attr:`authentication` without a lifespan."""
        self.storage.upgrade()

    @property
    def resolver(self) -> Resolver:
        """The one resolution operation shared by REST and MCP (the spec's ``ResolveBundle``)."""
        return self.services.resolver

    def begin_shutdown(self) -> None:
        """End the open event streams and the blocked asks (their bundles detach and stay
        answerable), so a graceful shutdown need not wait for them. Call it when the server
        starts shutting down, before it waits for connections to close."""
        self.services.asking.begin_shutdown()
        self.asgi_app.state.rest.events.close()

    def close(self) -> None:
        """Release the database engine and the SQLite file's lock (the ASGI lifespan has
        already ended)."""
        if self.engine is not None:
            self.engine.dispose()
        if self.storage.close_probe is not None:
            self.storage.close_probe()
        if self.storage.lock is not None and not self._lock_released:
            release_sqlite_file(self.storage.lock)
            self._lock_released = True


@attrs.frozen
class Storage:
    """Persistence as one unit: the claims, host records and tokens that share a store.

    Build one with :meth:`in_memory` or :meth:`sql` (on an engine you created and own), or
    from your own repositories, and pass it as ``build_clarion(storage=...)``; Clarion then
    opens no database of its own. ``engine`` (when the repositories are SQL) is the database
    live delivery and start-up recovery look at, and whose schema :meth:`upgrade` migrates.
    """

    claims: ClaimRepository
    host: HostRepository
    tokens: TokenStore
    # Routes and the outbox ``claims`` records events in (None: no notifications).
    notifications: NotificationStore | None = None
    label: str = "provided by the host"
    engine: Engine | None = None
    check: Callable[[], object] | None = None  # the health probe (``/healthz``)
    # Held while this service lives: the SQLite file's lock (one process per file).
    lock: Path | None = None
    close_probe: Callable[[], None] | None = None  # releases the health probe's engine

    @classmethod
    def in_memory(cls, clock: Clock, ids: IdGenerator) -> Storage:
        """Everything in one process's memory; nothing is kept."""
        store = InMemoryStore()
        return cls(
            claims=InMemoryClaimRepository(store, clock, ids),
            host=InMemoryHostRepository(store, clock, ids),
            tokens=InMemoryTokenStore(store, clock, ids),
            notifications=InMemoryNotificationStore(store, clock, ids),
            label="in memory (nothing is kept)",
        )

    @classmethod
    def sql(
        cls, engine: Engine, clock: Clock, ids: IdGenerator, *, lock: Path | None = None
    ) -> Storage:
        """Clarion's SQL repositories on ``engine`` (SQLite or PostgreSQL), with a health
        probe of its own. The schema is migrated by :meth:`upgrade`, not here."""
        check, close_probe = database_probe(engine)
        return cls(
            claims=SqlClaimRepository(engine, clock, ids),
            host=SqlHostRepository(engine, clock, ids),
            tokens=SqlTokenStore(engine, clock, ids),
            notifications=SqlNotificationStore(engine, clock, ids),
            label=engine.url.render_as_string(hide_password=True),
            engine=engine,
            check=check,
            lock=lock,
            close_probe=close_probe,
        )

    @property
    def recovers_at_once(self) -> bool:
        """No other process can be delivering: no shared database, or SQLite under its file
        lock."""
        return self.engine is None or self.lock is not None

    def upgrade(self) -> None:
        """Apply the database migrations (idempotent; nothing to do without an engine). The
        ASGI lifespan calls it first; call it yourself to use the services without one."""
        if self.engine is not None:
            upgrade_database(self.engine)


def open_storage(settings: Settings, clock: Clock, ids: IdGenerator) -> Storage:
    """Open the storage ``settings.database_url`` names, ready to use: on SQLite take the
    file's lock first (one serving process per file), then migrate the schema."""
    if settings.database_url == MEMORY_URL:
        return Storage.in_memory(clock, ids)
    engine = create_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    lock = None
    if engine.dialect.name == "sqlite":
        assert engine.url.database is not None
        lock = hold_sqlite_file(engine.url.database)  # before anything writes to it
    try:
        upgrade_database(engine)
        return Storage.sql(engine, clock, ids, lock=lock)
    except BaseException:
        if lock is not None:
            release_sqlite_file(lock)
        raise


@contextmanager
def administration(settings: Settings) -> Iterator[Authentication]:
    """Users and tokens on ``settings.database_url`` for a short administrative command
    (``clarion users create``, ``clarion tokens create``). It neither serves nor recovers, so
    it takes no SQLite file lock and may run next to the serving process."""
    clock, ids = SystemClock(), UuidIds()
    if settings.database_url == MEMORY_URL:
        yield Authentication(InMemoryTokenStore(InMemoryStore(), clock, ids), clock, ids)
        return
    engine = create_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    try:
        upgrade_database(engine)
        yield Authentication(SqlTokenStore(engine, clock, ids), clock, ids)
    finally:
        engine.dispose()


@contextmanager
def route_administration(settings: Settings) -> Iterator[NotificationRouting]:
    """Notification routes on ``settings.database_url`` for ``clarion notify`` (the operator is
    unscoped: it manages every route). Like :func:`administration`, no file lock is taken."""
    clock, ids = SystemClock(), UuidIds()
    runner = Runner()
    if settings.database_url == MEMORY_URL:
        store = InMemoryStore()
        yield NotificationRouting(
            store=InMemoryNotificationStore(store, clock, ids),
            host=InMemoryHostRepository(store, clock, ids),
            users=InMemoryTokenStore(store, clock, ids),
            runner=runner,
        )
        return
    engine = create_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    try:
        upgrade_database(engine)
        yield NotificationRouting(
            store=SqlNotificationStore(engine, clock, ids),
            host=SqlHostRepository(engine, clock, ids),
            users=SqlTokenStore(engine, clock, ids),
            runner=runner,
        )
    finally:
        engine.dispose()


async def _recover(services: Services, clock: Clock, settings: Settings) -> None:
    # The grace is longer than any delivery can take (the resume wait is bounded at 30 s, live
    # delivery at 35 s), so no process rolls back a delivery another one is still making.
    grace = timedelta(seconds=settings.recovery_grace_s)
    await services.lifecycle.reconcile_on_startup(clock.now() - grace)


async def _keep_recovering(services: Services, clock: Clock, settings: Settings) -> None:
    while True:
        await anyio.sleep(settings.recovery_interval_s)
        try:
            await _recover(services, clock, settings)
        except ClarionError as exc:
            log.warning("recovery.failed", **failure_fields(exc))  # the next round retries


async def _purge_sessions(authentication: Authentication, runner: Runner) -> None:
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


async def _keep_purging_sessions(authentication: Authentication, runner: Runner) -> None:
    while True:
        await anyio.sleep(SESSION_PURGE_INTERVAL_S)
        await _purge_sessions(authentication, runner)


def _live_delivery(
    settings: Settings,
    storage: Storage,
    claims: ClaimRepository,
    waiters: Waiters | None,
    events: EventPublisher | None,
    limiter: anyio.CapacityLimiter,
) -> PostgresLiveDelivery | None:
    """LISTEN/NOTIFY delivery across processes when configured (or ``auto`` on PostgreSQL),
    unless the host injected its own waiters or events.

    Raises:
        ValidationError: ``postgres`` was asked for on a database that is not PostgreSQL.
    """
    is_postgres = storage.engine is not None and storage.engine.dialect.name == "postgresql"
    mode = settings.live_delivery
    if mode == "postgres" and not is_postgres:
        raise ValidationError(
            "CLARION_LIVE_DELIVERY=postgres needs a PostgreSQL database", field="live_delivery"
        )
    if mode == "memory" or not is_postgres or waiters is not None or events is not None:
        return None
    assert storage.engine is not None
    return postgres_waiters_and_events(
        storage.engine,
        claims=claims,
        local_waiters=InMemoryWaiters(),
        local_events=InProcessEventBus(),
        limiter=limiter,
    )


def _event_source(events: EventPublisher) -> EventSource:
    """The publisher the use cases write to, as the source the event stream and the inbox read.

    Raises:
        ValueError: it cannot be subscribed to (it has no ``subscribe``).
    """
    if not hasattr(events, "subscribe"):
        raise ValueError("the event stream needs an EventSource")
    return cast(EventSource, events)


def _allowed_hosts(settings: Settings) -> HostAllowlist:
    """The ``Host`` names served: loopback names, plus ``CLARION_ALLOWED_HOSTS``.

    Raises:
        ValidationError: an entry is neither ``name`` nor ``name:port``.
    """
    try:
        return HostAllowlist.of(settings.allowed_hosts)
    except ValueError as exc:
        raise ValidationError(str(exc), field="allowed_hosts") from exc


def default_notifiers(
    settings: Settings, answer_links: AnswerLinkIssuer | None = None
) -> dict[str, Notifier]:
    """The channels ``settings`` configure: webhook and Apprise always, e-mail with an SMTP
    host (its answer links from ``answer_links``, else the inbox deep link)."""
    secret = settings.notify_webhook_secret or settings.resume_webhook_secret
    notifiers: dict[str, Notifier] = {
        "webhook": WebhookNotifier(secret=secret),
        "apprise": AppriseNotifier(),
    }
    if settings.smtp_host:
        smtp = SmtpSettings(
            host=settings.smtp_host,
            port=settings.smtp_port,
            security=settings.smtp_security,
            username=settings.smtp_username,
            password=settings.smtp_password,
            sender=settings.smtp_from,
        )
        notifiers["email"] = EmailNotifier(smtp, links=answer_links)
    return notifiers


def _notifications(
    settings: Settings,
    storage: Storage,
    services: Services,
    tokens: TokenStore,
    notifiers: dict[str, Notifier],
) -> tuple[NotificationWorker | None, NotificationRouting | None]:
    store = storage.notifications
    if store is None:
        return None, None
    worker = NotificationWorker(
        store=store,
        claims=services.claims,
        host=services.host_repository,
        authorizer=services.authorizer,
        users=tokens,
        notifiers=notifiers,
        expire=services.lifecycle.expire_bundle,
        answer=services.resolver.resolve,
        clock=services.clock,
        runner=services.runner,
        public_url=settings.base_url,
        policy=DeliveryPolicy(
            max_attempts=settings.notify_max_attempts, poll_interval_s=settings.notify_poll_s
        ),
    )
    routing = NotificationRouting(
        store=store, host=services.host_repository, users=tokens, runner=services.runner
    )
    return worker, routing


def build_clarion(
    settings: Settings | None = None,
    *,
    storage: Storage | None = None,
    authorizer: TaskAuthorizer | None = None,
    waiters: Waiters | None = None,
    dispatcher: ResumeDispatcher | None = None,
    events: EventPublisher | None = None,
    clock: Clock | None = None,
    ids: IdGenerator | None = None,
    notifiers: dict[str, Notifier] | None = None,
    answer_links: AnswerLinkIssuer | None = None,
) -> Clarion:
    """Build a Clarion service from ``settings`` (default: ``Settings.from_env()``).

    Only what is not passed in is built. Without ``storage``, the database
    ``settings.database_url`` names is opened with :func:`open_storage` — its one explicit
    start-up step: on SQLite the file's lock is taken (a second serving process fails at once),
    then the schema is migrated; ``memory://`` keeps everything in memory. With ``storage``, no
    database is opened, created or migrated while building; the ASGI lifespan upgrades its
    schema first thing at start-up (:meth:`Clarion.upgrade` without a lifespan).
    ``events`` must also be an ``EventSource`` (have ``subscribe``) for the REST event stream
    and the web inbox to work. ``notifiers`` (channel kind → :class:`Notifier`) replaces the
    channels the settings configure; ``answer_links`` gives the e-mail channel its signed
    answer links.
    """
    settings = settings if settings is not None else Settings.from_env()
    allowed_hosts = _allowed_hosts(settings)
    clock = clock if clock is not None else SystemClock()
    ids = ids if ids is not None else UuidIds()
    injected = storage is not None
    if storage is None:
        storage = open_storage(settings, clock, ids)
    claims = crashing_claims(settings.test_crash_after, storage.claims)
    host, tokens = storage.host, storage.tokens
    limiter = anyio.CapacityLimiter(WORKER_THREADS)
    live = _live_delivery(settings, storage, claims, waiters, events, limiter)
    if live is not None:
        waiters, events = live.waiters, live.events
    if events is None:
        events = InProcessEventBus()
    if dispatcher is None:
        dispatcher = (
            WebhookResumeDispatcher(
                settings.resume_webhook,
                timeout=settings.resume_timeout_s,
                secret=settings.resume_webhook_secret,
            )
            if settings.resume_webhook
            else OutboxResumeDispatcher(claims, limiter)
        )
    dispatcher = crashing_dispatcher(settings.test_crash_after, dispatcher)
    services = build_services(
        claims=claims,
        host=host,
        authorizer=authorizer if authorizer is not None else HostTaskAuthorizer(host),
        # Not ``waiters or ...``: an empty InMemoryWaiters is falsy (it has ``__len__``).
        waiters=waiters if waiters is not None else InMemoryWaiters(),
        dispatcher=dispatcher,
        events=events,
        clock=clock,
        ids=ids,
        limiter=limiter,
        ask_timeout=settings.ask_timeout_s,
        resume_timeout=settings.resume_timeout_s,
        users=tokens,
        limits=settings.limits,
    )
    authentication = Authentication(tokens, clock, ids)
    channels = notifiers if notifiers is not None else default_notifiers(settings, answer_links)
    worker, routing = _notifications(settings, storage, services, tokens, channels)
    mcp = build_mcp(
        services,
        auth_enabled=settings.auth_enabled,
        authentication=authentication,
        tool_suffix=settings.tool_suffix,
        progress_interval=settings.progress_interval_s,
        allowed_hosts=allowed_hosts,
        agent_workspace=settings.agent_workspace,
        elicitation=settings.elicitation == "auto",
        elicitation_keys=settings.elicitation_keys,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if injected:
                # Start-up's first step for injected storage (open_storage already migrated
                # its own): the schema is current before anything reads or writes.
                await anyio.to_thread.run_sync(storage.upgrade)
            if storage.engine is not None:
                # The lifespan owns the engine: its pool is released when serving ends (the
                # engine stays usable, so Clarion.close() afterwards is harmless).
                stack.callback(storage.engine.dispose)
            if live is not None:
                # Entered early so it closes late: MCP asks still waiting end before it stops.
                await stack.enter_async_context(live)
            await stack.enter_async_context(mcp.lifespan())
            if storage.recovers_at_once:
                # In memory, or SQLite under its file lock: no other process can be delivering,
                # so recover everything now.
                await services.lifecycle.reconcile_on_startup()
            else:
                # PostgreSQL: other processes may share the database, so recover only
                # deliveries older than any in flight, and keep doing so, since a process that
                # died leaves markers nobody else would clear.
                await _recover(services, clock, settings)
            await _purge_sessions(authentication, services.runner)
            async with anyio.create_task_group() as background:
                if not storage.recovers_at_once:
                    background.start_soon(_keep_recovering, services, clock, settings)
                background.start_soon(_keep_purging_sessions, authentication, services.runner)
                if worker is not None:
                    background.start_soon(worker.run_forever)
                try:
                    yield
                finally:
                    background.cancel_scope.cancel()
                    app.state.rest.events.close()

    app = create_rest_app(
        services,
        auth_enabled=settings.auth_enabled,
        authentication=authentication,
        event_source=_event_source(events),
        database_check=storage.check,
        allowed_hosts=allowed_hosts,
        extra_routes=[*mcp.routes, *web_routes()],
        lifespan=lifespan,
        notification_routing=routing,
    )
    return Clarion(
        settings=settings,
        services=services,
        authentication=authentication,
        asgi_app=app,
        storage=storage,
        notifications=worker,
        notification_routes=routing,
    )
