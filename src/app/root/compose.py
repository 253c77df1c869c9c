"""The composition root: the one place that chooses concrete adapters.

``build_clarion(settings, **overrides)`` wires every port from :class:`Settings`; a host may pass
any of them instead (``storage=`` — claims, host records and tokens as one unit —,
``authorizer=``, ``waiters=``, ``dispatcher=``, ``events=``, ``clock=``, ``ids=``), and only what
was not passed is built. Without ``storage``, the storage ``settings.database_url`` names is
built by :func:`open_storage` (``memory://`` keeps everything in memory). ``events`` must also
be an ``EventSource`` (have ``subscribe``) for the REST event stream and the web inbox to work.
``notifiers`` (channel kind → :class:`Notifier`) replaces the channels the settings configure
(the default e-mail channel carries the signed answer links of ``Clarion.answer_links``).
Nothing is built at import time, and an injected storage is not touched while building.

Building never creates, locks or migrates a database, injected or not: that is start-up's
first step, :meth:`Clarion.upgrade` (on a SQLite file of ``settings``, its lock — so a second
serving process fails at once —, then the migrations), which the ASGI lifespan runs before
anything else and ``clarion serve`` runs before it serves (without a lifespan, call it yourself).
The lifespan then owns the MCP session managers, live delivery, recovery, the purge of ended
browser sessions, the event streams and the database engine's pool; :meth:`Clarion.close`
releases the engine and the lock when no lifespan ran (CLI commands, scripts).
"""

from __future__ import annotations

import anyio
import attrs
from sqlalchemy.engine import Engine
from starlette.applications import Starlette

from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.root.crashpoints import crashing_claims
from clarion.app.root.settings import Settings
from clarion.app.root.storage import MEMORY_URL, Startup, Storage, open_storage
from clarion.app.root.wings import surfaces as surface
from clarion.app.root.wings.core import core_services, people_of
from clarion.app.root.wings.delivery import delivery
from clarion.app.root.wings.maintenance import maintenance_wing, storage_wing
from clarion.app.root.wings.notifications import notifications_wing
from clarion.app.root.wings.slack import slack_wing
from clarion.app.root.wings.telemetry import Telemetry
from clarion.app.usecases.answer_links import AnswerLinks
from clarion.app.usecases.auth import Authentication
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.notification_routes import NotificationRouting
from clarion.app.usecases.notifications import NotificationWorker
from clarion.app.usecases.resolve import Resolver
from clarion.app.usecases.runner import Runner
from clarion.app.usecases.services import Services
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.events import EventPublisher
from clarion.ports.notifications import Notifier
from clarion.ports.resume import ResumeDispatcher
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.waiters import Waiters

__all__ = ["MEMORY_URL", "Clarion", "Storage", "build_clarion", "open_storage"]

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
    # Start-up's storage step (the lock and the migrations), shared with the lifespan.
    _startup: Startup = attrs.field(
        alias="startup", default=attrs.Factory(lambda self: Startup(self.storage), takes_self=True)
    )

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
        self._startup.upgrade()

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
        self._startup.close()


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
    """Build a Clarion service from ``settings`` (default: ``Settings.from_env()``): only
    what is not passed in is built (see the module's documentation), each feature by its
    wing (:mod:`clarion.app.root.wings`)."""
    settings = settings if settings is not None else Settings.from_env()
    hosts = surface.allowed_hosts(settings)
    clock = clock if clock is not None else SystemClock()
    ids = ids if ids is not None else UuidIds()
    storage = storage if storage is not None else open_storage(settings, clock, ids)
    claims = crashing_claims(settings.test_crash_after, storage.claims)
    runner = Runner(anyio.CapacityLimiter(WORKER_THREADS))  # the one Runner (#32)
    wired = delivery(
        settings, storage, claims, runner, waiters=waiters, events=events, dispatcher=dispatcher
    )
    authorizer = authorizer if authorizer is not None else HostTaskAuthorizer(storage.host)
    telemetry = Telemetry()
    services = core_services(
        settings, storage, claims, authorizer, wired, telemetry, clock, ids, notifiers
    )
    people = people_of(services)
    startup = Startup(storage)
    wings = [
        storage_wing(startup, noted=lambda: surface.note_ephemeral_keys(settings)),
        wired.wing,
        surface.surfaces_wing(settings, services, people, hosts),
        slack_wing(settings, people.slack, runner),
        telemetry.wing(settings, services, claims),
        maintenance_wing(settings, storage, services, people.authentication, runner),
        notifications_wing(people.notifications),
    ]
    app = surface.rest_app(settings, services, people, storage, wired.events, hosts, wings)
    telemetry.instrument(app)
    return Clarion(
        settings,
        services,
        people.authentication,
        app,
        storage,
        people.answer_links,
        people.notifications,
        people.notification_routes,
        startup=startup,
    )
