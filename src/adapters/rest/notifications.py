"""Notification routes over REST (issue #17): ``/api/v1/notifications/routes``.

Who may manage which route is :class:`clarion.app.usecases.notification_routes
.NotificationRouting`'s rule (an administrator every route, a workspace owner that
workspace's); a route the caller may not manage is the same 404 as a missing one.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from clarion.adapters import wire
from clarion.adapters.rest.auth import require_identity
from clarion.adapters.rest.bodies import read_model
from clarion.adapters.rest.routes import Endpoint
from clarion.adapters.wire import models
from clarion.app.usecases.notification_routes import NotificationRouting
from clarion.domain.errors import NotFound, Resource
from clarion.domain.notifications import ROUTE_EVENTS, Route, RouteSpec, parse_channel


def route_model(route: Route) -> models.NotificationRoute:
    return models.NotificationRoute(
        id=route.id,
        workspace_id=route.workspace_id,
        channel=str(route.channel),
        user_id=route.user_id,
        events=list(route.events),
        remind_after_s=route.remind_after_s,
        escalate_after_s=route.escalate_after_s,
        escalate_to=route.escalate_to,
        deadline_after_s=route.deadline_after_s,
        on_deadline=route.on_deadline,
        include_answers=route.include_answers,
        created_by=route.created_by,
        created_at=route.created_at,
        secret=route.secret,
    )


def notification_routes(routing: NotificationRouting | None) -> dict[str, Endpoint]:
    """The route-management endpoints, by operation id (404 when the storage keeps no
    notifications)."""

    def _routing() -> NotificationRouting:
        if routing is None:
            raise NotFound(resource=Resource.NOTIFICATIONS)
        return routing

    async def add_route(request: Request) -> Response:
        body = await read_model(request, models.NotificationRouteIn)
        spec = RouteSpec(
            workspace_id=body.workspace_id,
            channel=parse_channel(body.channel),
            user_id=body.user_id,
            events=tuple(body.events) or ROUTE_EVENTS,
            remind_after_s=body.remind_after_s,
            escalate_after_s=body.escalate_after_s,
            escalate_to=body.escalate_to,
            deadline_after_s=body.deadline_after_s,
            on_deadline=body.on_deadline,
            include_answers=body.include_answers,
        )
        route = await _routing().add(require_identity(request), spec)
        return JSONResponse(wire.unstructure(route_model(route)), status_code=201)

    async def list_routes(request: Request) -> Response:
        routes = await _routing().list(require_identity(request))
        items = [route_model(route) for route in routes]
        return JSONResponse(wire.unstructure(models.NotificationRouteList(items, len(items))))

    async def remove_route(request: Request) -> Response:
        await _routing().remove(require_identity(request), request.path_params["route_id"])
        return JSONResponse(wire.unstructure(models.Success(True)))

    return {
        "addNotificationRoute": add_route,
        "listNotificationRoutes": list_routes,
        "removeNotificationRoute": remove_route,
    }
