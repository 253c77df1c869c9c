"""How answers reach the asking agent: the waiters and event bus (in process, or over
PostgreSQL's LISTEN/NOTIFY across processes), and the resume dispatcher (the outbox, or a
webhook the operator configured)."""

from __future__ import annotations

from urllib.parse import urlsplit

import attrs

from clarion.adapters.events import InProcessEventBus
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.outbound import OutboundPolicy, OutboundRefused, OutboundUnresolved
from clarion.adapters.postgres_notify import PostgresLiveDelivery, postgres_waiters_and_events
from clarion.adapters.resume import OutboxResumeDispatcher, WebhookResumeDispatcher
from clarion.app.root.crashpoints import crashing_dispatcher
from clarion.app.root.settings import Settings
from clarion.app.root.storage import Storage
from clarion.app.root.wings import Wing
from clarion.app.usecases.runner import Runner
from clarion.domain.errors import ValidationError
from clarion.ports.claims import ClaimRepository
from clarion.ports.events import EventPublisher
from clarion.ports.resume import ResumeDispatcher
from clarion.ports.waiters import Waiters


@attrs.frozen
class Delivery:
    """The delivery ports the use cases are built on, and the wing that runs them (live
    delivery's listener, entered early so it closes late: MCP asks still waiting end before
    it stops)."""

    waiters: Waiters
    events: EventPublisher
    dispatcher: ResumeDispatcher
    wing: Wing
    # The one Runner: the worker threads the synchronous ports run on, shared by every use
    # case and adapter.
    runner: Runner


def delivery(
    settings: Settings,
    storage: Storage,
    claims: ClaimRepository,
    runner: Runner,
    *,
    waiters: Waiters | None = None,
    events: EventPublisher | None = None,
    dispatcher: ResumeDispatcher | None = None,
) -> Delivery:
    """The given ports, and the rest from ``settings``.

    Raises:
        ValidationError: ``CLARION_LIVE_DELIVERY=postgres`` on another database, or a resume
            webhook that cannot be reached (:func:`check_resume_webhook`).
    """
    live = _live_delivery(settings, storage, claims, waiters, events, runner)
    if live is not None:
        waiters, events = live.waiters, live.events
    if dispatcher is None:
        dispatcher = _dispatcher(settings, claims, runner)
    return Delivery(
        # Not ``waiters or ...``: an empty InMemoryWaiters is falsy (it has ``__len__``).
        waiters=waiters if waiters is not None else InMemoryWaiters(),
        events=events if events is not None else InProcessEventBus(),
        dispatcher=crashing_dispatcher(settings.test_crash_after, dispatcher),
        wing=Wing(contexts=(lambda: live,) if live is not None else ()),
        runner=runner,
    )


def _dispatcher(settings: Settings, claims: ClaimRepository, runner: Runner) -> ResumeDispatcher:
    if not settings.resume_webhook:
        return OutboxResumeDispatcher(claims, runner)
    policy = outbound_policy(settings)
    check_resume_webhook(settings, policy)
    return WebhookResumeDispatcher(
        settings.resume_webhook,
        timeout=settings.resume_timeout_s,
        secret=settings.resume_webhook_secret,
        policy=policy,
    )


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


def outbound_policy(settings: Settings) -> OutboundPolicy:
    """The internal destinations ``CLARION_OUTBOUND_ALLOW`` allows (issue #29 S4).

    Raises:
        ValidationError: the setting has an entry that is no network, address or host name.
    """
    try:
        return OutboundPolicy.parse(settings.outbound_allow)
    except ValueError as exc:
        raise ValidationError(str(exc), field="CLARION_OUTBOUND_ALLOW") from exc


def check_resume_webhook(settings: Settings, policy: OutboundPolicy) -> None:
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
