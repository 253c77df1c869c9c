"""The route label the request timer and the tracer share (issue #20; #29 S3): the template of
the route that served the request, read from what the router left in the scope; the route a
request refused before routing would have reached; ``unmatched`` for a path no route matches —
also when an embedding host mounted Clarion under its own router."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from clarion.adapters.prometheus import PrometheusMetrics, RouteTimer

TEMPLATE = "/things/{thing_id}/respond"


async def _served(request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


class _RefuseUnlessAllowed:
    """Stands for the guard and authentication middleware: a request without ``allow`` in its
    query is answered 401 before the router sees it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and b"allow" not in scope.get("query_string", b""):
            await PlainTextResponse("no", status_code=401)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _timed_app(metrics: PrometheusMetrics) -> Starlette:
    app = Starlette(routes=[Route(TEMPLATE, _served, methods=["POST"])])
    app.add_middleware(_RefuseUnlessAllowed)
    app.add_middleware(RouteTimer, metrics=metrics, routes=app.routes)
    return app


def _labels(metrics: PrometheusMetrics) -> set[tuple[str, str, str]]:
    from prometheus_client import generate_latest

    return {
        (sample.labels["route"], sample.labels["method"], sample.labels["status"])
        for family in text_string_to_metric_families(generate_latest(metrics.registry).decode())
        for sample in family.samples
        if sample.name == "clarion_http_request_duration_seconds_count"
    }


def test_a_request_is_timed_under_the_route_that_served_it_or_would_have() -> None:
    metrics = PrometheusMetrics()
    with TestClient(_timed_app(metrics)) as client:
        assert client.post("/things/a/respond?allow").status_code == 200
        assert client.get("/things/a/respond?allow").status_code == 405
        assert client.post("/things/a/respond").status_code == 401
        assert client.post("/elsewhere/secret-1?allow").status_code == 404
        assert client.post("/elsewhere/secret-2").status_code == 401
    assert _labels(metrics) == {
        (TEMPLATE, "POST", "200"),
        (TEMPLATE, "GET", "405"),  # the route does not serve the method: still its route
        (TEMPLATE, "POST", "401"),  # refused before routing: the route it would have reached
        ("unmatched", "POST", "404"),
        ("unmatched", "POST", "401"),
    }


def test_a_host_mounting_clarion_does_not_lend_its_mount_to_an_unmatched_path() -> None:
    """The host's router leaves its own mount in the scope before Clarion's app runs; a path
    Clarion does not route is still ``unmatched``, not the host's prefix."""
    metrics = PrometheusMetrics()
    host = Starlette(routes=[Mount("/clarion", app=_timed_app(metrics))])
    with TestClient(host) as client:
        assert client.post("/clarion/things/a/respond?allow").status_code == 200
        assert client.post("/clarion/nowhere?allow").status_code == 404
    assert _labels(metrics) == {(TEMPLATE, "POST", "200"), ("unmatched", "POST", "404")}
