"""The Prometheus :class:`clarion.ports.telemetry.Metrics` (issue #20; docs/observability.md).

Every metric lives in the instance's own :class:`CollectorRegistry` (never the global one), so
two Clarion instances in one process — tests, an embedding host — never share counters. The
pending figures are not counted here: :meth:`PrometheusMetrics.observe_state` installs a
collector that reads them from the database at each scrape (so every process reports the same
numbers) together with this process's live asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Final

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from clarion.domain.listing import PendingSummary

log = structlog.get_logger(__name__)

# Time to answer: 1 s … 24 h.
ANSWER_BUCKETS: Final = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400)
# Request durations: 5 ms … 2 min (a blocking ask's call lasts as long as the person takes).
DURATION_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
# Label values come from fixed sets only (#29 S3): every series lives as long as the process,
# so a value a client chooses would let it grow memory and the scrape without bound. HTTP
# methods are case-sensitive tokens anyone may invent: one outside this set is counted as
# OTHER, like a status outside 100-599.
KNOWN_METHODS: Final = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}
)
OTHER: Final = "other"


def method_label(method: str) -> str:
    """``method`` when it is a standard HTTP method, else ``other``."""
    return method if method in KNOWN_METHODS else OTHER


def status_label(status: int) -> str:
    """The status code as text when it is one (100-599), else ``other``."""
    return str(status) if 100 <= status <= 599 else OTHER


class PrometheusMetrics:
    """Counters, histograms and scrape-time gauges in one registry (:attr:`registry`)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self._created = Counter(
            "clarion_bundles_created",
            "Bundles stored (a deduplicated ask creates none)",
            registry=r,
        )
        self._resolved = Counter(
            "clarion_bundles_resolved",
            "Bundles resolved (claim won, delivery settled), by outcome and the winner's surface",
            ["outcome", "surface"],
            registry=r,
        )
        self._lost = Counter(
            "clarion_claims_lost",
            "Callers that lost the claim and were told the winner's answer, by surface",
            ["surface"],
            registry=r,
        )
        self._refused = Counter(
            "clarion_validation_refusals",
            "Requests refused as invalid, by operation (answer, ask)",
            ["operation"],
            registry=r,
        )
        self._resumes = Counter(
            "clarion_resume_dispatches",
            "Resumes of detached agents, by result (accepted, refused)",
            ["result"],
            registry=r,
        )
        self._notifications = Counter(
            "clarion_notification_deliveries",
            "Notifications, by channel and result",
            ["channel", "result"],
            registry=r,
        )
        self._elicitations = Counter(
            "clarion_elicitation_responses",
            "Asking clients' responses to a question offered in them, by mode and result",
            ["mode", "result"],
            registry=r,
        )
        self._answer_time = Histogram(
            "clarion_time_to_answer_seconds",
            "From a bundle's creation to its winning claim",
            buckets=ANSWER_BUCKETS,
            registry=r,
        )
        self._http = Histogram(
            "clarion_http_request_duration_seconds",
            "HTTP requests by route template, method and status",
            ["route", "method", "status"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._tools = Histogram(
            "clarion_mcp_tool_call_duration_seconds",
            "MCP tool calls by tool",
            ["tool"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )

    # -- the port ------------------------------------------------------------------------

    def bundle_created(self) -> None:
        self._created.inc()

    def bundle_resolved(self, outcome: str, surface: str, seconds_to_answer: float) -> None:
        self._resolved.labels(outcome, surface).inc()
        self._answer_time.observe(seconds_to_answer)

    def claim_lost(self, surface: str) -> None:
        self._lost.labels(surface).inc()

    def validation_refused(self, operation: str) -> None:
        self._refused.labels(operation).inc()

    def resume_dispatched(self, result: str) -> None:
        self._resumes.labels(result).inc()

    def notification_delivered(self, channel: str, result: str) -> None:
        self._notifications.labels(channel, result).inc()

    def http_request(self, route: str, method: str, status: int, seconds: float) -> None:
        self._http.labels(route, method_label(method), status_label(status)).observe(seconds)

    def tool_call(self, tool: str, seconds: float) -> None:
        self._tools.labels(tool).observe(seconds)

    def elicitation_response(self, mode: str, result: str) -> None:
        self._elicitations.labels(mode, result).inc()

    # -- scrape-time state ---------------------------------------------------------------

    def observe_state(
        self,
        *,
        pending: Callable[[], PendingSummary],
        live_asks: Callable[[], int],
        now: Callable[[], datetime],
    ) -> None:
        """Report, at each scrape, the database's pending figures (``pending``: one cheap
        read) and this process's blocked asks."""
        self.registry.register(_StateCollector(pending, live_asks, now))


class _StateCollector(Collector):
    def __init__(
        self,
        pending: Callable[[], PendingSummary],
        live_asks: Callable[[], int],
        now: Callable[[], datetime],
    ) -> None:
        self._pending = pending
        self._live_asks = live_asks
        self._now = now

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            "clarion_live_asks", "Asks blocked waiting in this process", value=self._live_asks()
        )
        try:
            summary = self._pending()
        except Exception:
            log.warning("metrics.pending_read_failed", exc_info=True)
            return
        yield GaugeMetricFamily(
            "clarion_pending_bundles",
            "Active bundles waiting for an answer (read from the database at scrape time)",
            value=summary.count,
        )
        oldest = summary.oldest_created_at
        age = 0.0 if oldest is None else max(0.0, (self._now() - oldest).total_seconds())
        yield GaugeMetricFamily(
            "clarion_oldest_pending_age_seconds",
            "Age of the oldest active bundle; 0 when none waits (read at scrape time)",
            value=age,
        )

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())


__all__ = ["ANSWER_BUCKETS", "KNOWN_METHODS", "PrometheusMetrics", "method_label"]
