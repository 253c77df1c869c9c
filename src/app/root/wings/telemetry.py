"""Telemetry: Prometheus metrics (``GET /metrics``, every route timed) and OpenTelemetry
spans when the ``otel`` extra is installed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
from starlette.applications import Starlette

from clarion.adapters.prometheus import METRICS_PATH, PrometheusMetrics, RouteTimer, metrics_route
from clarion.app.root.settings import Settings
from clarion.app.root.wings import Wing
from clarion.app.usecases.services import Services
from clarion.ports.claims import ClaimRepository

if TYPE_CHECKING:
    from clarion.adapters.otel import OtelTracer

IDENTIFIED_PATHS = (METRICS_PATH,)


@attrs.frozen
class Telemetry:
    """The metrics and tracer the use cases report to."""

    metrics: PrometheusMetrics = attrs.field(factory=PrometheusMetrics)
    tracer: OtelTracer | None = attrs.field(factory=lambda: otel_tracer())

    def wing(self, settings: Settings, services: Services, claims: ClaimRepository) -> Wing:
        """``GET /metrics``, with the gauges read from ``claims`` and the live asks."""
        self.metrics.observe_state(
            pending=claims.pending_summary,
            live_asks=lambda: services.asking.live_asks,
            now=services.clock.now,
        )
        route = metrics_route(
            self.metrics, auth_enabled=settings.auth_enabled, offload=services.runner
        )
        return Wing(routes=(route,))

    def instrument(self, app: Starlette) -> None:
        """Time every route of ``app`` (and trace it, with a tracer)."""
        app.add_middleware(RouteTimer, metrics=self.metrics, routes=app.routes)
        if self.tracer is not None:
            from clarion.adapters.otel import TracingMiddleware

            app.add_middleware(TracingMiddleware, tracer=self.tracer, routes=app.routes)


def otel_tracer() -> OtelTracer | None:
    """Spans through the global OpenTelemetry provider when the ``otel`` extra is installed
    (non-recording, so nothing is sent, until the host configures one); None otherwise."""
    try:
        from clarion.adapters.otel import OtelTracer
    except ImportError:
        return None
    return OtelTracer()
