"""The composition root: the one place that chooses concrete adapters.

``build_clarion(settings, **overrides)`` wires every port from :class:`Settings`; a host may pass
any of them instead (``storage=`` — claims, host records and tokens as one unit —,
``authorizer=``, ``waiters=``, ``dispatcher=``, ``events=``, ``clock=``, ``ids=``), and only what
was not passed is built. Nothing is built at import time, and an injected storage is not touched
while building. Building never creates, locks or migrates a database: that is start-up's first
step, :meth:`Clarion.upgrade` (on a SQLite file of ``settings``, its lock, then the migrations),
which the ASGI lifespan runs before anything else and ``clarion serve`` runs before it serves.
The lifespan then owns the MCP session managers, live delivery, recovery, the purge of ended
browser sessions, the event streams and the database engine's pool; :meth:`Clarion.close`
releases the engine and the lock when no lifespan ran (CLI commands, scripts).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast
from urllib.parse import urlsplit

import anyio
import attrs
import structlog
from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from clarion.adapters.events import InProcessEventBus
from clarion.adapters.http_guard import HostAllowlist
from clarion.adapters.mcp import build_mcp
from clarion.adapters.mcp.elicitation import Setting
from clarion.adapters.memory import (
    InMemoryAnswerLinkStore,
    InMemoryAskRecords,
    InMemoryClaimRepository,
    InMemoryHostRepository,
    InMemoryNotificationStore,
    InMemoryStore,
    InMemoryTokenStore,
)
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.notify import (
    AppriseNotifier,
    EmailNotifier,
    RouteDestinations,
    SmtpSettings,
    WebhookNotifier,
)
from clarion.adapters.outbound import OutboundPolicy, OutboundRefused, OutboundUnresolved
from clarion.adapters.postgres_notify import PostgresLiveDelivery, postgres_waiters_and_events
from clarion.adapters.prometheus import METRICS_PATH, PrometheusMetrics, RouteTimer, metrics_route
from clarion.adapters.rest.app import create_rest_app
from clarion.adapters.resume import OutboxResumeDispatcher, WebhookResumeDispatcher
from clarion.adapters.sql import (
    PostgresLease,
    SqlAnswerLinkStore,
    SqlAskRecords,
    SqlClaimRepository,
    SqlHostRepository,
    SqlNotificationStore,
    SqlTokenStore,
    create_engine,
    database_probe,
    hold_sqlite_file,
    lease_for,
    release_sqlite_file,
    upgrade_database,
)
from clarion.adapters.system import SystemClock, UuidIds
from clarion.adapters.web import web_routes
from clarion.app.root.crashpoints import crashing_claims, crashing_dispatcher
from clarion.app.root.settings import Settings
from clarion.app.usecases.answer_links import AnswerLinks
from clarion.app.usecases.auth import Authentication, LoginThrottle
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.notification_routes import NotificationRouting
from clarion.app.usecases.notifications import DeliveryPolicy, NotificationWorker
from clarion.app.usecases.resolve import Resolver
from clarion.app.usecases.runner import Runner
from clarion.app.usecases.services import Services, build_services
from clarion.app.usecases.slack import PROVIDER as SLACK
from clarion.app.usecases.slack import SlackAnswering
from clarion.domain.errors import ClarionError, ValidationError, failure_fields
from clarion.ports.answer_links import AnswerLinkStore
from clarion.ports.asks import AskRecords
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.events import EventPublisher, EventSource
from clarion.ports.host import HostRepository
from clarion.ports.notifications import (
    AnswerLinkIssuer,
    ChatUserLink,
    NotificationStore,
    Notifier,
    PostedMessages,
)
from clarion.ports.resume import ResumeDispatcher
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.threads import Offload
from clarion.ports.tokens import TokenStore
from clarion.ports.waiters import Waiters

if TYPE_CHECKING:
    from clarion.adapters.otel import OtelTracer

log = structlog.get_logger(__name__)

MEMORY_URL = "memory://"
# Ended and expired browser sessions are deleted at start-up, at every login, and this often.
SESSION_PURGE_INTERVAL_S = 3600.0
WORKER_THREADS = 32


@attrs.define
class Clarion:
    """A wired Clarion service.

    ``asgi_app`` serves REST, both MCP surfaces and the web inbox; ``services`` are the use
    cases (``services.resolver.resolve(identity, pending_id, outcome, surface=...)`` is the
    spec's ``ResolveBundle``); ``authentication`` issues users and personal access tokens;
    ``answer_links`` makes the signed single-use answer links e-mail carries
    (``answer_links.link_for(recipient, pending_id)``) and serves their page.
    """

    settings: Settings
    services: Services
    authentication: Authentication
    asgi_app: Starlette
    storage: Storage
    answer_links: AnswerLinks
    # The notification worker and route management (None: the storage keeps no outbox).
    notifications: NotificationWorker | None = None
    notification_routes: NotificationRouting | None = None
    _lock: Path | None = attrs.field(default=None, init=False)
    _upgraded: bool = attrs.field(default=False, init=False)

    @property
    def database_label(self) -> str:
        return self.storage.label

    @property
    def engine(self) -> Engine | None:
        return self.storage.engine

    def upgrade(self) -> None:
        """Start-up's storage step, the first thing the ASGI lifespan does (``clarion serve``
        runs it before serving): on the SQLite file ``settings`` names, take the file's lock
        (one serving process per file), then migrate the schema to the current revision.
        Idempotent. Call it yourself before using :attr:`services` or :attr:`authentication`
        without a lifespan.

        Raises:
            DatabaseInUse: another process holds the SQLite file.
        """
        if self._upgraded:
            return
        if self.storage.lock_file is not None and self._lock is None:
            self._lock = hold_sqlite_file(self.storage.lock_file)  # before anything writes
        self.storage.upgrade()
        self._upgraded = True

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
        if self._lock is not None:
            release_sqlite_file(self._lock)
            self._lock = None


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
            asks=InMemoryAskRecords(),
            label="in memory (nothing is kept)",
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
        )

    @property
    def recovers_at_once(self) -> bool:
        """No other process can be delivering: no shared database, or SQLite under its file
        lock."""
        return self.engine is None or self.lock_file is not None

    def upgrade(self) -> None:
        """Apply the database migrations (idempotent; nothing to do without an engine). The
        ASGI lifespan calls it first; call it yourself to use the services without one."""
        if self.engine is not None:
            upgrade_database(self.engine)


def open_storage(settings: Settings, clock: Clock, ids: IdGenerator) -> Storage:
    """The storage ``settings.database_url`` names. Nothing is connected, created or migrated
    here (the engine connects on first use); :meth:`Clarion.upgrade` does that at start-up, on
    SQLite after taking the file's lock."""
    if settings.database_url == MEMORY_URL:
        return Storage.in_memory(clock, ids)
    engine = create_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    lock_file = engine.url.database if engine.dialect.name == "sqlite" else None
    return Storage.sql(engine, clock, ids, lock_file=lock_file)


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
            email_needs_user=settings.auth_enabled,
            destinations=RouteDestinations(outbound_policy(settings)),
            unconfigured=unconfigured_channels(configured_channels(settings)),
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
            email_needs_user=settings.auth_enabled,
            destinations=RouteDestinations(outbound_policy(settings)),
            unconfigured=unconfigured_channels(configured_channels(settings)),
        )
    finally:
        engine.dispose()


# The channel kinds that need a setting to deliver, and the setting (docs/notifications.md).
CHANNEL_SETTINGS: Final = {"email": "CLARION_SMTP_HOST", "slack": "CLARION_SLACK_BOT_TOKEN"}


def configured_channels(settings: Settings) -> frozenset[str]:
    """The channel kinds :func:`default_notifiers` gives ``settings`` (Slack's needs the
    notification store too, which every storage but a host's own has)."""
    kinds = {"webhook", "apprise"}
    if settings.smtp_host:
        kinds.add("email")
    if settings.slack_bot_token:
        kinds.add("slack")
    return frozenset(kinds)


def unconfigured_channels(available: Collection[str]) -> dict[str, str]:
    """Each channel kind that needs a setting and is not in ``available``, with the setting."""
    return {kind: name for kind, name in CHANNEL_SETTINGS.items() if kind not in available}


@attrs.frozen
class SlackLinks:
    """``clarion users link-slack|unlink-slack|slack-links``: Slack accounts linked to users."""

    store: NotificationStore
    users: TokenStore

    def link(self, user_id: str, slack_user_id: str) -> ChatUserLink:
        """Link ``slack_user_id`` to ``user_id`` (replacing any user it was linked to).

        Raises:
            ValidationError: not a Slack user id, or no active user ``user_id``.
        """
        slack_user_id = slack_user_id.strip()
        if not (
            slack_user_id[:1] in ("U", "W")
            and len(slack_user_id) > 2
            and slack_user_id.isalnum()
            and slack_user_id.isupper()
        ):
            raise ValidationError(
                f"not a Slack user id: {slack_user_id!r} (like U0123ABCD; in Slack: "
                "the person's profile → ⋮ → Copy member ID)",
                field="slack_user_id",
            )
        user = self.users.get_user(user_id)
        if user is None or not user.active:
            raise ValidationError(f"no active user {user_id!r}", field="user_id")
        return self.store.link_chat_user(SLACK, slack_user_id, user.id)

    def unlink(self, slack_user_id: str) -> bool:
        return self.store.unlink_chat_user(SLACK, slack_user_id.strip())

    def links(self) -> tuple[ChatUserLink, ...]:
        return self.store.chat_user_links(SLACK)


@contextmanager
def slack_links(settings: Settings) -> Iterator[SlackLinks]:
    """Slack account links on ``settings.database_url`` (no file lock, like
    :func:`administration`)."""
    clock, ids = SystemClock(), UuidIds()
    if settings.database_url == MEMORY_URL:
        store = InMemoryStore()
        yield SlackLinks(
            InMemoryNotificationStore(store, clock, ids), InMemoryTokenStore(store, clock, ids)
        )
        return
    engine = create_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    try:
        upgrade_database(engine)
        yield SlackLinks(
            SqlNotificationStore(engine, clock, ids), SqlTokenStore(engine, clock, ids)
        )
    finally:
        engine.dispose()


def _otel_tracer() -> OtelTracer | None:
    """Spans through the global OpenTelemetry provider when the ``otel`` extra is installed
    (non-recording, so nothing is sent, until the host configures one); None otherwise."""
    try:
        from clarion.adapters.otel import OtelTracer
    except ImportError:
        return None
    return OtelTracer()


@contextmanager
def audit_records(settings: Settings) -> Iterator[ClaimRepository]:
    """The clarification rows on ``settings.database_url`` for ``clarion audit export``: read
    only (after the migrations ``serve`` would apply), no lock, no recovery."""
    clock, ids = SystemClock(), UuidIds()
    if settings.database_url == MEMORY_URL:
        yield InMemoryClaimRepository(InMemoryStore(), clock, ids)
        return
    engine = create_engine(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    try:
        upgrade_database(engine)
        yield SqlClaimRepository(engine, clock, ids)
    finally:
        engine.dispose()


async def _recover(services: Services, clock: Clock, settings: Settings) -> None:
    # The grace is longer than any delivery can take (the resume wait is bounded at 30 s, live
    # delivery at 35 s), so no process rolls back a delivery another live one is still making;
    # a delivery whose process is gone (its lease is free) is rolled back at once (issue #28).
    grace = timedelta(seconds=settings.recovery_grace_s)
    await services.lifecycle.reconcile_on_startup(clock.now() - grace)


async def _keep_recovering(
    services: Services, clock: Clock, settings: Settings, lease: PostgresLease | None
) -> None:
    """Every ``recovery_interval_s``: renew this process's lease, then recover (one indexed
    read when nothing is in delivery). A failure is logged and the next round retries."""
    while True:
        await anyio.sleep(settings.recovery_interval_s)
        if lease is not None:
            try:
                await anyio.to_thread.run_sync(lease.renew)
            except Exception as exc:  # noqa: BLE001 - the database is away: the next round retries
                log.warning("lease.renew_failed", **failure_fields(exc))
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
    runner: Runner,
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
        offload=runner,
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


def _answer_links(
    settings: Settings,
    storage: Storage,
    services: Services,
    claims: ClaimRepository,
    users: TokenStore,
    runner: Runner,
) -> AnswerLinks:
    return AnswerLinks(
        resolver=services.resolver,
        claims=claims,
        users=users,
        store=storage.answer_links
        if storage.answer_links is not None
        else InMemoryAnswerLinkStore(),
        clock=services.clock,
        runner=runner,
        base_url=settings.base_url,
        keys=settings.answer_link_keys,
        ttl=timedelta(seconds=settings.answer_link_ttl_s),
        auth_enabled=settings.auth_enabled,
    )


def _note_ephemeral_keys(settings: Settings) -> None:
    if not settings.answer_link_keys:
        log.info(
            "answer_links.ephemeral_key",
            detail="CLARION_ANSWER_LINK_KEYS is unset: answer links are signed with a random "
            "key of this process and stop working when it restarts",
        )


@attrs.frozen
class _NotificationPorts:
    """The driven ports the notification worker and route management read."""

    claims: ClaimRepository
    host: HostRepository
    authorizer: TaskAuthorizer
    users: TokenStore
    runner: Runner


def _slack_adapter() -> Any:
    """The Slack adapter package.

    Raises:
        ValidationError: the ``slack`` extra is not installed.
    """
    try:
        import clarion.adapters.slack as slack
    except ImportError as exc:
        raise ValidationError(
            "Slack needs the extra: pip install 'clarion[slack]'", field="slack_bot_token"
        ) from exc
    return slack


def outbound_policy(settings: Settings) -> OutboundPolicy:
    """The internal destinations ``CLARION_OUTBOUND_ALLOW`` allows (issue #29 S4).

    Raises:
        ValidationError: the setting has an entry that is no network, address or host name.
    """
    try:
        return OutboundPolicy.parse(settings.outbound_allow)
    except ValueError as exc:
        raise ValidationError(str(exc), field="CLARION_OUTBOUND_ALLOW") from exc


def _check_resume_webhook(settings: Settings, policy: OutboundPolicy) -> None:
    """Refuse at start-up a resume webhook whose host is, or resolves to, an internal address
    the operator did not allow (every POST would be refused). A name that does not resolve now
    is let through: each POST resolves and checks it again.

    Raises:
        ValidationError: naming ``CLARION_RESUME_WEBHOOK``.
    """
    parts = urlsplit(settings.resume_webhook)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise ValidationError(
            "CLARION_RESUME_WEBHOOK has a port that is not a number",
            field="CLARION_RESUME_WEBHOOK",
        ) from exc
    try:
        policy.resolve_now(parts.hostname or "", port)
    except OutboundUnresolved:
        pass
    except OutboundRefused as exc:
        raise ValidationError(
            f"CLARION_RESUME_WEBHOOK: {exc} (for a receiver on this machine: "
            "CLARION_OUTBOUND_ALLOW=127.0.0.1,::1,localhost)",
            field="CLARION_RESUME_WEBHOOK",
        ) from exc


def default_notifiers(
    settings: Settings,
    answer_links: AnswerLinkIssuer | None = None,
    posted: PostedMessages | None = None,
    offload: Offload | None = None,
) -> dict[str, Notifier]:
    """The channels ``settings`` configure: webhook and Apprise always, e-mail with an SMTP
    host (its answer links from ``answer_links``, else the inbox deep link), Slack with a bot
    token and a store to record its messages in (``posted``); Apprise and Slack offload
    through ``offload`` (the one Runner). The webhook signs with the
    server-wide secret when one is set, else with each route's own; it reaches internal
    addresses only as ``CLARION_OUTBOUND_ALLOW`` allows."""
    secret = settings.notify_webhook_secret or settings.resume_webhook_secret
    notifiers: dict[str, Notifier] = {
        "webhook": WebhookNotifier(
            secret=secret, timeout=settings.notify_timeout_s, policy=outbound_policy(settings)
        ),
        "apprise": AppriseNotifier(offload=offload),
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
    if settings.slack_bot_token and posted is not None:
        slack = _slack_adapter()
        api = slack.SlackApi(
            settings.slack_bot_token, api_url=settings.slack_api_url, offload=offload
        )
        notifiers["slack"] = slack.SlackNotifier(api, posted, offload=offload)
    return notifiers


def _slack_routes(
    settings: Settings, storage: Storage, services: Services, users: TokenStore, runner: Runner
) -> list[BaseRoute]:
    """``POST /integrations/slack/interactions`` when a signing secret is configured.

    Raises:
        ValidationError: no bot token to answer through, the storage keeps no notifications
            (nowhere to link Slack users), or the ``slack`` extra is missing.
    """
    if not settings.slack_signing_secret:
        return []
    if not settings.slack_bot_token:
        raise ValidationError(
            "CLARION_SLACK_SIGNING_SECRET needs CLARION_SLACK_BOT_TOKEN too (the answers are "
            "sent back through Slack's Web API)",
            field="CLARION_SLACK_BOT_TOKEN",
        )
    if storage.notifications is None:
        raise ValidationError(
            "Slack interactions need a storage with notifications", field="slack_signing_secret"
        )
    slack = _slack_adapter()
    answering = SlackAnswering(
        resolver=services.resolver,
        links=storage.notifications,
        users=users,
        runner=runner,
        auth_enabled=settings.auth_enabled,
    )
    api = slack.SlackApi(settings.slack_bot_token, api_url=settings.slack_api_url, offload=runner)
    interactions = slack.SlackInteractions(
        signing_secret=settings.slack_signing_secret, answering=answering, api=api
    )
    routes: list[BaseRoute] = interactions.routes()
    return routes


def _notifications(
    settings: Settings,
    storage: Storage,
    services: Services,
    ports: _NotificationPorts,
    notifiers: dict[str, Notifier],
) -> tuple[NotificationWorker | None, NotificationRouting | None]:
    store = storage.notifications
    if store is None:
        return None, None
    worker = NotificationWorker(
        store=store,
        claims=ports.claims,
        host=ports.host,
        authorizer=ports.authorizer,
        users=ports.users,
        notifiers=notifiers,
        expire=services.lifecycle.expire_bundle,
        answer=services.resolver.resolve,
        clock=services.clock,
        runner=ports.runner,
        metrics=services.metrics,
        public_url=settings.base_url,
        policy=DeliveryPolicy(
            max_attempts=settings.notify_max_attempts,
            poll_interval_s=settings.notify_poll_s,
            delivery_timeout_s=settings.notify_timeout_s,
            concurrency=settings.notify_concurrency,
        ),
    )
    routing = NotificationRouting(
        store=store,
        host=ports.host,
        users=ports.users,
        runner=ports.runner,
        email_needs_user=settings.auth_enabled,
        destinations=RouteDestinations(outbound_policy(settings)),
        unconfigured=unconfigured_channels(notifiers.keys()),
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
) -> Clarion:
    """Build a Clarion service from ``settings`` (default: ``Settings.from_env()``).

    Only what is not passed in is built. Without ``storage``, the storage
    ``settings.database_url`` names is built by :func:`open_storage` (``memory://`` keeps
    everything in memory). Building opens, creates, locks and migrates no database, injected
    or not: start-up's first step, :meth:`Clarion.upgrade`, does (the ASGI lifespan runs it;
    without a lifespan, call it yourself), and on a SQLite file of ``settings`` it first takes
    the file's lock, so a second serving process fails at once.
    ``events`` must also be an ``EventSource`` (have ``subscribe``) for the REST event stream
    and the web inbox to work. ``notifiers`` (channel kind → :class:`Notifier`) replaces the
    channels the settings configure (the default e-mail channel carries the signed answer
    links of ``Clarion.answer_links``).
    """
    settings = settings if settings is not None else Settings.from_env()
    allowed_hosts = _allowed_hosts(settings)
    clock = clock if clock is not None else SystemClock()
    ids = ids if ids is not None else UuidIds()
    if storage is None:
        storage = open_storage(settings, clock, ids)
    claims = crashing_claims(settings.test_crash_after, storage.claims)
    host, tokens = storage.host, storage.tokens
    runner = Runner(anyio.CapacityLimiter(WORKER_THREADS))  # the one Runner (#32)
    live = _live_delivery(settings, storage, claims, waiters, events, runner)
    if live is not None:
        waiters, events = live.waiters, live.events
    if events is None:
        events = InProcessEventBus()
    if dispatcher is None:
        if settings.resume_webhook:
            policy = outbound_policy(settings)
            _check_resume_webhook(settings, policy)
            dispatcher = WebhookResumeDispatcher(
                settings.resume_webhook,
                timeout=settings.resume_timeout_s,
                secret=settings.resume_webhook_secret,
                policy=policy,
            )
        else:
            dispatcher = OutboxResumeDispatcher(claims, runner)
    dispatcher = crashing_dispatcher(settings.test_crash_after, dispatcher)
    task_authorizer = authorizer if authorizer is not None else HostTaskAuthorizer(host)
    metrics = PrometheusMetrics()
    tracing = _otel_tracer()
    services = build_services(
        claims=claims,
        host=host,
        authorizer=task_authorizer,
        # Not ``waiters or ...``: an empty InMemoryWaiters is falsy (it has ``__len__``).
        waiters=waiters if waiters is not None else InMemoryWaiters(),
        dispatcher=dispatcher,
        events=events,
        clock=clock,
        ids=ids,
        runner=runner,
        ask_timeout=settings.ask_timeout_s,
        resume_timeout=settings.resume_timeout_s,
        users=tokens,
        limits=settings.limits,
        metrics=metrics,
        tracer=tracing,
        ask_records=storage.asks if storage.asks is not None else InMemoryAskRecords(),
    )
    metrics.observe_state(
        pending=claims.pending_summary,
        live_asks=lambda: services.asking.live_asks,
        now=clock.now,
    )
    limits = settings.limits
    authentication = Authentication(
        tokens,
        clock,
        ids,
        max_sessions=limits.max_login_sessions,
        throttle=LoginThrottle(
            max_failures=limits.max_login_failures, window_s=limits.login_failure_window_s
        ),
    )
    answer_links = _answer_links(settings, storage, services, claims, tokens, runner)
    channels = (
        notifiers
        if notifiers is not None
        else default_notifiers(settings, answer_links, storage.notifications, runner)
    )
    worker, routing = _notifications(
        settings,
        storage,
        services,
        _NotificationPorts(claims, host, task_authorizer, tokens, runner),
        channels,
    )
    mcp = build_mcp(
        services,
        auth_enabled=settings.auth_enabled,
        authentication=authentication,
        tool_suffix=settings.tool_suffix,
        progress_interval=settings.progress_interval_s,
        allowed_hosts=allowed_hosts,
        agent_workspace=settings.agent_workspace,
        elicitation=Setting(settings.elicitation),
        elicitation_keys=settings.elicitation_keys,
        elicitation_min_human_s=settings.elicitation_min_human_ms / 1000,
        # URL mode (issue #31): the answer-link page, made for the asking identity and valid
        # for as long as its ask may wait.
        agent_link=lambda identity, pending_id: answer_links.agent_link_for(
            identity, pending_id, ttl=timedelta(seconds=settings.ask_timeout_s)
        ),
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            # Start-up's first step: the SQLite file's lock, then the schema is current
            # before anything reads or writes.
            await anyio.to_thread.run_sync(clarion.upgrade)
            # Notes only once the configuration has proved usable (#30): never ahead of a
            # start-up error.
            _note_ephemeral_keys(settings)
            if storage.engine is not None:
                # The lifespan owns the engine: its pool is released when serving ends (the
                # engine stays usable, so Clarion.close() afterwards is harmless).
                stack.callback(storage.engine.dispose)
            if storage.lease is not None:
                # Held before anything is claimed, released when serving has ended: while it
                # is held, other replicas leave this process's deliveries to it (issue #28).
                await anyio.to_thread.run_sync(storage.lease.acquire)
                stack.callback(storage.lease.release)
            if live is not None:
                # Entered early so it closes late: MCP asks still waiting end before it stops.
                await stack.enter_async_context(live)
            await stack.enter_async_context(mcp.lifespan())
            if storage.recovers_at_once:
                # In memory, or SQLite under its file lock: no other process can be delivering,
                # so recover everything now.
                await services.lifecycle.reconcile_on_startup()
            else:
                # PostgreSQL: other processes may share the database, so recover the
                # deliveries of processes that are gone and those older than any in flight,
                # and keep doing so, since a process that dies leaves markers nobody else
                # would clear.
                await _recover(services, clock, settings)
            await _purge_sessions(authentication, runner)
            async with anyio.create_task_group() as background:
                if not storage.recovers_at_once:
                    background.start_soon(
                        _keep_recovering, services, clock, settings, storage.lease
                    )
                background.start_soon(_keep_purging_sessions, authentication, runner)
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
        extra_routes=[
            *mcp.routes,
            *web_routes(answer_links),
            *_slack_routes(settings, storage, services, tokens, runner),
            metrics_route(metrics, auth_enabled=settings.auth_enabled, offload=runner),
        ],
        identified_paths=(METRICS_PATH,),
        lifespan=lifespan,
        notification_routing=routing,
        body_timeout_s=settings.body_timeout_s,
    )
    app.add_middleware(RouteTimer, metrics=metrics, routes=app.routes)
    if tracing is not None:
        from clarion.adapters.otel import TracingMiddleware

        app.add_middleware(TracingMiddleware, tracer=tracing, routes=app.routes)
    clarion = Clarion(
        settings=settings,
        services=services,
        authentication=authentication,
        asgi_app=app,
        storage=storage,
        answer_links=answer_links,
        notifications=worker,
        notification_routes=routing,
    )
    return clarion
