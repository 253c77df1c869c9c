"""The composition root: the one place that chooses concrete adapters.

``build_clarion(settings, **overrides)`` wires every port from :class:`Settings`; a host may pass
any port instead (``claims=``, ``host=``, ``tokens=``, ``authorizer=``, ``waiters=``,
``dispatcher=``, ``events=``, ``clock=``, ``ids=``). Nothing is built at import time. The ASGI
application's lifespan owns the MCP session managers, live delivery, recovery, the purge of ended
browser sessions, the event streams and the database engine's pool; :meth:`Clarion.close`
releases the engine when no lifespan ran (CLI commands, scripts).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta

import anyio
import attrs
import sqlalchemy as sa
import structlog
from mcp.server.transport_security import TransportSecuritySettings
from sqlalchemy.engine import Engine
from starlette.applications import Starlette

from clarion.adapters.events import InProcessEventBus
from clarion.adapters.mcp import build_mcp, local_transport_security
from clarion.adapters.memory import (
    InMemoryClaimRepository,
    InMemoryHostRepository,
    InMemoryStore,
    InMemoryTokenStore,
)
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.postgres_notify import PostgresLiveDelivery, postgres_waiters_and_events
from clarion.adapters.rest.app import create_rest_app
from clarion.adapters.resume import OutboxResumeDispatcher, WebhookResumeDispatcher
from clarion.adapters.sql import (
    SqlClaimRepository,
    SqlHostRepository,
    SqlTokenStore,
    create_engine,
    upgrade_database,
)
from clarion.adapters.system import SystemClock, UuidIds
from clarion.adapters.web import web_routes
from clarion.app.authorization import HostTaskAuthorizer
from clarion.app.services import Services, build_services
from clarion.app.settings import Settings
from clarion.app.usecases.auth import Authentication
from clarion.app.usecases.resolve import Resolver
from clarion.app.usecases.runner import Runner
from clarion.domain.errors import ClarionError, ValidationError
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.events import EventPublisher
from clarion.ports.host import HostRepository
from clarion.ports.resume import ResumeDispatcher
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.tokens import TokenStore
from clarion.ports.waiters import Waiters

log = structlog.get_logger(__name__)

MEMORY_URL = "memory://"
# Longer than any delivery can take (the resume wait is bounded at 30 s, live delivery at 35 s).
RECOVERY_GRACE = timedelta(minutes=2)
RECOVERY_INTERVAL_S = 60.0
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
    database_label: str
    engine: Engine | None = None

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
        """Release the database engine (the ASGI lifespan has already ended)."""
        if self.engine is not None:
            self.engine.dispose()


@attrs.frozen
class _Storage:
    claims: ClaimRepository
    host: HostRepository
    tokens: TokenStore
    label: str
    engine: Engine | None
    check: Callable[[], object] | None


def _storage(settings: Settings, clock: Clock, ids: IdGenerator) -> _Storage:
    if settings.database_url == MEMORY_URL:
        store = InMemoryStore()
        return _Storage(
            claims=InMemoryClaimRepository(store, clock, ids),
            host=InMemoryHostRepository(store, clock, ids),
            tokens=InMemoryTokenStore(store, clock, ids),
            label="in memory (nothing is kept)",
            engine=None,
            check=None,
        )
    engine = create_engine(settings.database_url)
    upgrade_database(engine)

    def check() -> object:
        with engine.connect() as connection:
            return connection.execute(sa.text("SELECT 1")).scalar_one()

    return _Storage(
        claims=SqlClaimRepository(engine, clock, ids),
        host=SqlHostRepository(engine, clock, ids),
        tokens=SqlTokenStore(engine, clock, ids),
        label=engine.url.render_as_string(hide_password=True),
        engine=engine,
        check=check,
    )


async def _recover(services: Services, clock: Clock) -> None:
    await services.lifecycle.reconcile_on_startup(clock.now() - RECOVERY_GRACE)


async def _keep_recovering(services: Services, clock: Clock) -> None:
    while True:
        await anyio.sleep(RECOVERY_INTERVAL_S)
        try:
            await _recover(services, clock)
        except ClarionError:
            log.warning("recovery.failed", exc_info=True)  # the next round retries


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
    storage: _Storage,
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


def _transport_security(settings: Settings) -> TransportSecuritySettings:
    """The MCP Host/Origin check: loopback names, plus ``CLARION_ALLOWED_HOSTS``."""
    local = local_transport_security()
    if not settings.allowed_hosts:
        return local
    hosts = [*local.allowed_hosts]
    origins = [*local.allowed_origins]
    for name in settings.allowed_hosts:
        # "name" admits the bare Host a proxy on 80/443 sends and "name:<any port>".
        patterns = [name] if ":" in name else [name, f"{name}:*"]
        for pattern in patterns:
            hosts.append(pattern)
            origins.extend((f"http://{pattern}", f"https://{pattern}"))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def build_clarion(
    settings: Settings | None = None,
    *,
    claims: ClaimRepository | None = None,
    host: HostRepository | None = None,
    tokens: TokenStore | None = None,
    authorizer: TaskAuthorizer | None = None,
    waiters: Waiters | None = None,
    dispatcher: ResumeDispatcher | None = None,
    events: EventPublisher | None = None,
    clock: Clock | None = None,
    ids: IdGenerator | None = None,
) -> Clarion:
    """Build a Clarion service from ``settings`` (default: ``Settings.from_env()``).

    The database named by ``settings.database_url`` is created and migrated here (``memory://``
    keeps everything in memory). Repositories passed in replace the ones the database would
    provide; ``events`` must also be an ``EventSource`` (have ``subscribe``) for the REST event
    stream and the web inbox to work.
    """
    settings = settings if settings is not None else Settings.from_env()
    clock = clock or SystemClock()
    ids = ids or UuidIds()
    storage = _storage(settings, clock, ids)
    claims = claims or storage.claims
    host = host or storage.host
    tokens = tokens or storage.tokens
    limiter = anyio.CapacityLimiter(WORKER_THREADS)
    live = _live_delivery(settings, storage, claims, waiters, events, limiter)
    if live is not None:
        waiters, events = live.waiters, live.events
    events = events or InProcessEventBus()
    if dispatcher is None:
        dispatcher = (
            WebhookResumeDispatcher(settings.resume_webhook, timeout=settings.resume_timeout_s)
            if settings.resume_webhook
            else OutboxResumeDispatcher(host, limiter)
        )
    services = build_services(
        claims=claims,
        host=host,
        authorizer=authorizer or HostTaskAuthorizer(host),
        waiters=waiters or InMemoryWaiters(),
        dispatcher=dispatcher,
        events=events,
        clock=clock,
        ids=ids,
        limiter=limiter,
        ask_timeout=settings.ask_timeout_s,
        resume_timeout=settings.resume_timeout_s,
        users=tokens,
    )
    authentication = Authentication(tokens, clock, ids)
    mcp = build_mcp(
        services,
        auth_enabled=settings.auth_enabled,
        authentication=authentication,
        tool_suffix=settings.tool_suffix,
        progress_interval=settings.progress_interval_s,
        transport_security=_transport_security(settings),
        elicitation=settings.elicitation == "auto",
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if storage.engine is not None:
                # The lifespan owns the engine: its pool is released when serving ends (the
                # engine stays usable, so Clarion.close() afterwards is harmless).
                stack.callback(storage.engine.dispose)
            if live is not None:
                # Entered early so it closes late: MCP asks still waiting end before it stops.
                await stack.enter_async_context(live)
            await stack.enter_async_context(mcp.lifespan())
            if live is None:
                # One process: nothing else can be delivering, so recover everything now.
                await services.lifecycle.reconcile_on_startup()
            else:
                # Several replicas: recover only deliveries older than any in flight, and keep
                # doing so, since a replica that died leaves markers nobody else would clear.
                await _recover(services, clock)
            await _purge_sessions(authentication, services.runner)
            async with anyio.create_task_group() as background:
                if live is not None:
                    background.start_soon(_keep_recovering, services, clock)
                background.start_soon(_keep_purging_sessions, authentication, services.runner)
                try:
                    yield
                finally:
                    background.cancel_scope.cancel()
                    app.state.rest.events.close()

    app = create_rest_app(
        services,
        auth_enabled=settings.auth_enabled,
        authentication=authentication,
        database_check=storage.check,
        extra_routes=[*mcp.routes, *web_routes()],
        lifespan=lifespan,
    )
    return Clarion(
        settings=settings,
        services=services,
        authentication=authentication,
        asgi_app=app,
        database_label=storage.label,
        engine=storage.engine,
    )
