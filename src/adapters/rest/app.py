"""Building the REST surface: routes, middleware and error handlers over one ``Services``.

Nothing is built at import time. :func:`build_rest` returns the pieces (so a composition root
can put the MCP and web routes behind the same middleware); :func:`create_rest_app` wraps them
in a Starlette application on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Final

import anyio
import attrs
import structlog
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from clarion.adapters import wire
from clarion.adapters.body_deadline import DEFAULT_BODY_TIMEOUT_S, BodyDeadline
from clarion.adapters.http_guard import HostAllowlist, HttpGuard
from clarion.adapters.rest.approvals import approval_routes
from clarion.adapters.rest.auth import AuthMiddleware, auth_routes
from clarion.adapters.rest.body_limit import BodyLimitMiddleware
from clarion.adapters.rest.clarifications import clarification_routes
from clarion.adapters.rest.errors import EXCEPTION_HANDLERS, failure
from clarion.adapters.rest.events import CanSee, EventStream
from clarion.adapters.rest.host import host_routes
from clarion.adapters.rest.notifications import notification_routes
from clarion.adapters.rest.openapi import openapi_document
from clarion.adapters.rest.parameters import StorableParametersMiddleware
from clarion.adapters.rest.receipts import receipt_routes
from clarion.adapters.rest.request_log import RequestLogMiddleware
from clarion.adapters.rest.routes import Endpoint, operation_ids, starlette_routes
from clarion.adapters.rest.routing import IndexedRouter
from clarion.adapters.wire import models
from clarion.app.usecases.auth import Authentication
from clarion.app.usecases.listing import Listing
from clarion.app.usecases.notification_routes import NotificationRouting
from clarion.app.usecases.services import Services
from clarion.domain.errors import failure_fields
from clarion.domain.model import Identity
from clarion.ports.events import EventSource

log = structlog.get_logger(__name__)

HEALTH_TIMEOUT_S: Final = 5.0
DatabaseCheck = Callable[[], object]


@attrs.frozen
class RestApi:
    """The REST surface's parts: mount ``routes`` behind ``middleware`` (outermost first) with
    ``exception_handlers``; call ``events.close()`` on shutdown to end open event streams."""

    routes: tuple[BaseRoute, ...]
    middleware: tuple[Middleware, ...]
    exception_handlers: Mapping[Any, Callable[..., Any]]
    events: EventStream


def _visibility(listing: Listing) -> CanSee:
    async def can_see(identity: Identity, task_id: str) -> bool:
        try:
            return await listing.may_see_task(identity, task_id)
        except (
            Exception  # noqa: BLE001 - logged without driver text
        ) as exc:  # a failing authorizer hides the event (fail closed), never the stream
            log.warning("events.authorize_failed", task_id=task_id, **failure_fields(exc))
            return False

    return can_see


def _health(database_check: DatabaseCheck | None) -> Endpoint:
    """``GET /healthz``: the database check runs on a worker thread of its own (a limiter of
    one, not the shared worker pool), so requests filling the workers cannot make it fail."""
    limiter = anyio.CapacityLimiter(1)

    async def healthz(request: Request) -> Response:
        if database_check is not None:
            try:
                with anyio.fail_after(HEALTH_TIMEOUT_S):
                    await anyio.to_thread.run_sync(
                        database_check, limiter=limiter, abandon_on_cancel=True
                    )
            except Exception as exc:  # noqa: BLE001 - logged without driver text
                log.warning("health.database_unreachable", **failure_fields(exc))
                return failure(503, "database unreachable")
        return JSONResponse(wire.unstructure(models.Health("ok", "ok")))

    return healthz


def build_rest(
    services: Services,
    *,
    auth_enabled: bool,
    authentication: Authentication | None,
    event_source: EventSource,
    database_check: DatabaseCheck | None = None,
    heartbeat_s: float = 15.0,
    allowed_hosts: HostAllowlist | None = None,
    identified_paths: Collection[str] = (),
    notification_routing: NotificationRouting | None = None,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
) -> RestApi:
    """Every REST route, the request-log, HTTP-guard and authentication middleware, and the
    exception handlers answering every error in the surface's one shape. ``event_source``
    feeds the event stream (the in-process bus the use cases publish to, for example);
    ``database_check`` raises when the database is unreachable (``/healthz`` answers 503
    then); ``allowed_hosts`` are the ``Host`` names served
    (:class:`~clarion.adapters.http_guard.HttpGuard`; default loopback names only);
    ``identified_paths`` are paths outside ``/api/`` whose routes read the caller's identity
    (authenticated like ``/api/``; the route refuses a caller without one); a request body
    must arrive within ``body_timeout_s``
    (:class:`~clarion.adapters.body_deadline.BodyDeadline`)."""
    offload = services.runner
    events = EventStream(
        event_source,
        _visibility(services.listing),
        heartbeat_s=heartbeat_s,
        max_streams=services.limits.max_event_streams,
        offload=offload,
    )
    document = openapi_document(auth_enabled=auth_enabled)

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    endpoints = operation_ids(
        infrastructure={
            "health": _health(database_check),
            "openapi": openapi,
            "streamEvents": events.endpoint,
        },
        auth=auth_routes(auth_enabled=auth_enabled, authentication=authentication, offload=offload),
        clarification=clarification_routes(
            resolver=services.resolver,
            asking=services.asking,
            requests=services.requests,
            listing=services.listing,
            now=services.clock.now,
            receipt_link=services.receipts is not None,
            approvals=services.approvals,
        ),
        approvals=approval_routes(
            approvals=services.approvals,
            groups=services.groups,
            listing=services.listing,
            max_wait_s=services.asking.ask_timeout,
        ),
        host=host_routes(host=services.host, lifecycle=services.lifecycle),
        notifications=notification_routes(notification_routing),
        receipts=receipt_routes(services.receipts),
    )
    routes: list[BaseRoute] = [*starlette_routes(endpoints)]
    middleware = (
        Middleware(RequestLogMiddleware),
        # Inside the request log (and the metrics outside it): a stalled body is logged 408.
        Middleware(BodyDeadline, timeout_s=body_timeout_s),
        Middleware(HttpGuard, allowed_hosts=allowed_hosts),
        Middleware(StorableParametersMiddleware),
        Middleware(
            AuthMiddleware,
            enabled=auth_enabled,
            authentication=authentication,
            offload=offload,
            identified_paths=identified_paths,
        ),
        # Inside authentication: an unauthenticated REST request is refused before its body
        # is read (MCP authenticates inside its route, after this).
        Middleware(BodyLimitMiddleware, max_bytes=services.limits.max_body_bytes),
    )
    return RestApi(
        routes=tuple(routes),
        middleware=middleware,
        exception_handlers=EXCEPTION_HANDLERS,
        events=events,
    )


def create_rest_app(
    services: Services,
    *,
    auth_enabled: bool,
    authentication: Authentication | None,
    event_source: EventSource,
    database_check: DatabaseCheck | None = None,
    heartbeat_s: float = 15.0,
    allowed_hosts: HostAllowlist | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    identified_paths: Collection[str] = (),
    lifespan: Callable[[Starlette], AbstractAsyncContextManager[Any]] | None = None,
    notification_routing: NotificationRouting | None = None,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
) -> Starlette:
    """A Starlette application serving the REST surface (plus ``extra_routes`` behind the
    same middleware); ``app.state.rest`` is its :class:`RestApi`."""
    rest = build_rest(
        services,
        auth_enabled=auth_enabled,
        authentication=authentication,
        event_source=event_source,
        database_check=database_check,
        heartbeat_s=heartbeat_s,
        allowed_hosts=allowed_hosts,
        identified_paths=identified_paths,
        notification_routing=notification_routing,
        body_timeout_s=body_timeout_s,
    )
    app = Starlette(
        routes=[*rest.routes, *extra_routes],
        middleware=list(rest.middleware),
        exception_handlers=dict(rest.exception_handlers),
        lifespan=lifespan,
    )
    # Built as Starlette builds its router, but matching a request only against the routes
    # its first path segment can match (issue #35).
    app.router = IndexedRouter(app.routes, lifespan=lifespan)
    app.state.rest = rest
    return app
