"""Metrics in the Prometheus text format (issue #20): the :class:`~clarion.ports.telemetry.Metrics`
implementation, the ``/metrics`` route and the request timer."""

from clarion.adapters.prometheus.http import METRICS_PATH, RouteTimer, metrics_route
from clarion.adapters.prometheus.metrics import ANSWER_BUCKETS, PrometheusMetrics

__all__ = ["ANSWER_BUCKETS", "METRICS_PATH", "PrometheusMetrics", "RouteTimer", "metrics_route"]
