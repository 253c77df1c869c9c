"""The surfaces people and agents use: REST (the host application the other wings' routes
join), the three MCP endpoints, the web inbox and the answer-link page."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import structlog
from starlette.applications import Starlette

from clarion.adapters.http_guard import HostAllowlist
from clarion.adapters.mcp import build_mcp
from clarion.adapters.mcp.elicitation import Setting
from clarion.adapters.rest.app import create_rest_app
from clarion.adapters.web import web_routes
from clarion.app.root.settings import Settings
from clarion.app.root.storage import Storage
from clarion.app.root.wings import Lifespan, Wing, routes_of
from clarion.app.root.wings.telemetry import IDENTIFIED_PATHS
from clarion.app.usecases.people_services import PeopleServices
from clarion.app.usecases.services import Services
from clarion.domain.errors import ValidationError
from clarion.ports.events import EventPublisher, EventSource

log = structlog.get_logger(__name__)


def surfaces_wing(
    settings: Settings,
    services: Services,
    people: PeopleServices,
    allowed_hosts: HostAllowlist,
) -> Wing:
    """The MCP endpoints (whose session managers the lifespan runs), the inbox and the
    answer-link page."""
    answer_links = people.answer_links
    mcp = build_mcp(
        services,
        auth_enabled=settings.auth_enabled,
        authentication=people.authentication,
        tool_suffix=settings.tool_suffix,
        progress_interval=settings.progress_interval_s,
        allowed_hosts=allowed_hosts,
        elicitation=Setting(settings.elicitation),
        elicitation_keys=settings.elicitation_keys,
        elicitation_min_human_s=settings.elicitation_min_human_ms / 1000,
        # URL mode (issue #31): the answer-link page, made for the asking identity and valid
        # for as long as its ask may wait.
        agent_link=lambda identity, pending_id: answer_links.agent_link_for(
            identity, pending_id, ttl=timedelta(seconds=settings.ask_timeout_s)
        ),
    )
    return Wing(routes=(*mcp.routes, *web_routes(answer_links)), contexts=(mcp.lifespan,))


def rest_app(
    settings: Settings,
    services: Services,
    people: PeopleServices,
    storage: Storage,
    events: EventPublisher,
    allowed_hosts: HostAllowlist,
    wings: Sequence[Wing],
) -> Starlette:
    """The host application: REST, then every wing's routes behind the same middleware,
    with the wings' :class:`Lifespan`; its event streams end first at shutdown."""
    closing = Wing(stopping=(lambda: app.state.rest.events.close(),))
    app = create_rest_app(
        services,
        auth_enabled=settings.auth_enabled,
        authentication=people.authentication,
        event_source=event_source(events),
        database_check=storage.check,
        allowed_hosts=allowed_hosts,
        extra_routes=routes_of(wings),
        identified_paths=IDENTIFIED_PATHS,
        lifespan=Lifespan([*wings, closing]),
        notification_routing=people.notification_routes,
        body_timeout_s=settings.body_timeout_s,
    )
    return app


def event_source(events: EventPublisher) -> EventSource:
    """The publisher the use cases write to, as the source the event stream and the inbox read.

    Raises:
        ValueError: it cannot be subscribed to (it has no ``subscribe``).
    """
    if not isinstance(events, EventSource):
        raise ValueError("the event stream needs an EventSource")
    return events


def allowed_hosts(settings: Settings) -> HostAllowlist:
    """The ``Host`` names served: loopback names, plus ``CLARION_ALLOWED_HOSTS``.

    Raises:
        ValidationError: an entry is neither ``name`` nor ``name:port``.
    """
    try:
        return HostAllowlist.of(settings.allowed_hosts)
    except ValueError as exc:
        raise ValidationError(str(exc), field="allowed_hosts") from exc


def note_ephemeral_keys(settings: Settings) -> None:
    if not settings.answer_link_keys:
        log.info(
            "answer_links.ephemeral_key",
            detail="CLARION_ANSWER_LINK_KEYS is unset: answer links are signed with a random "
            "key of this process and stop working when it restarts",
        )
