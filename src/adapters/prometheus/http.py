"""``GET /metrics`` and the per-route request timer (issue #20).

With auth enabled, ``/metrics`` answers only an admin credential (the identity the
authentication middleware bound for this request, :func:`current_identity`): 401 without one,
403 for a non-admin — the figures describe every user's questions. With auth disabled it is
open, like everything else then.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.adapters.prometheus.metrics import PrometheusMetrics, method_label
from clarion.adapters.route_label import RouteLabel
from clarion.app.usecases.auth import current_identity
from clarion.app.usecases.runner import Runner
from clarion.ports.telemetry import Metrics
from clarion.ports.threads import Offload

METRICS_PATH: Final = "/metrics"


def metrics_route(
    metrics: PrometheusMetrics, *, auth_enabled: bool, offload: Offload | None = None
) -> Route:
    """The scrape endpoint over ``metrics.registry`` (admin only when ``auth_enabled``);
    ``offload`` runs the collection (give it the one Runner: a Runner of its own when None)."""
    run: Offload = offload if offload is not None else Runner()

    async def scrape(request: Request) -> Response:
        if auth_enabled:
            identity = current_identity()
            if identity is None:
                return JSONResponse(
                    {"error": "authentication required"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
            if not identity.is_admin:
                return JSONResponse({"error": "an admin credential is required"}, status_code=403)
        # Collecting reads the database (the pending gauges): off the event loop, under the
        # shared worker limiter like every store call.
        body = await run(generate_latest, metrics.registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    return Route(METRICS_PATH, scrape, methods=["GET"])


class RouteTimer:
    """Pure ASGI middleware timing every HTTP request under its route template (the path as
    the route table writes it, ``/api/v1/clarification/{pending_id}/respond``; a mount's
    prefix for MCP and ``unmatched`` for anything else — never the raw path;
    :class:`~clarion.adapters.route_label.RouteLabel`), method (one of :data:`KNOWN_METHODS`,
    else ``other``) and status."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self._metrics = metrics
        self._label = RouteLabel(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        routed_before = self._label.before(scope)

        async def recording(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording)
        finally:
            self._metrics.http_request(
                self._label.after(scope, routed_before),
                method_label(str(scope.get("method", ""))),
                status,
                time.perf_counter() - started,
            )


__all__ = ["METRICS_PATH", "RouteTimer", "metrics_route"]
