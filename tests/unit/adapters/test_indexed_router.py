"""The indexed router picks what Starlette's router picks, for any path and method (issue #35):
the route a request is handed to, the 405 of a route that matches all but the method, the
redirect to the path with or without its trailing slash, the 404."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Host, Match, Mount, Route, Router, WebSocketRoute
from starlette.types import Message, Scope

from clarion.adapters.rest.routing import IndexedRouter, first_segment


def _endpoint(name: str) -> Any:
    async def endpoint(request: Any) -> PlainTextResponse:
        return PlainTextResponse(name)

    return endpoint


def _table(*, catch_alls: bool) -> list[BaseRoute]:
    routes: list[BaseRoute] = [
        Route("/api/v1/items", _endpoint("create"), methods=["POST"]),
        Route("/api/v1/items", _endpoint("list"), methods=["GET"]),
        Route("/api/v1/items/{item_id}", _endpoint("item"), methods=["GET"]),
        Route("/api/v1/items/{item_id}/answer", _endpoint("answer"), methods=["POST"]),
        Route("/healthz", _endpoint("healthz")),
        Route("/mcp", _endpoint("mcp"), methods=["GET", "POST", "DELETE"]),
        Route("/mcp/session/{session_id}", _endpoint("session"), methods=["POST"]),
        Route("/mcp/agent", _endpoint("agent"), methods=["POST"]),
        Route("/", _endpoint("root")),
        Mount("/static", routes=[Route("/app.js", _endpoint("static"))]),
        Route("/answer/{token}", _endpoint("form"), methods=["GET"]),
        Route("/answer/{token}", _endpoint("submit"), methods=["POST"]),
        WebSocketRoute("/ws", _endpoint("ws")),
        Route("/metrics", _endpoint("metrics")),
    ]
    if catch_alls:
        routes[5:5] = [Route("/{page}", _endpoint("page"), methods=["GET"])]
        routes.append(Host("example.org", app=_endpoint("host")))
        routes.append(Mount("", routes=[Route("/late/{rest:path}", _endpoint("late"))]))
    return routes


SEGMENTS = st.sampled_from(
    [
        "api",
        "v1",
        "items",
        "answer",
        "healthz",
        "mcp",
        "session",
        "agent",
        "static",
        "app.js",
        "metrics",
        "ws",
        "late",
        "x",
        "42",
        "",
        "API",
    ]
)
PATHS = st.builds(
    lambda parts, slash: "/" + "/".join(parts) + ("/" if slash else ""),
    st.lists(SEGMENTS, min_size=0, max_size=5),
    st.booleans(),
)
METHODS = st.sampled_from(["GET", "POST", "DELETE", "PUT"])


def _scope(path: str, method: str, root_path: str = "") -> Scope:
    return {
        "type": "http",
        "method": method,
        "path": root_path + path,
        "root_path": root_path,
        "raw_path": (root_path + path).encode(),
        "query_string": b"",
        "headers": [(b"host", b"testserver")],
        "scheme": "http",
        "server": ("testserver", 80),
    }


def _first_full(routes: list[BaseRoute], scope: Scope) -> BaseRoute | None:
    for route in routes:
        if route.matches(scope)[0] is Match.FULL:
            return route
    return None


@settings(max_examples=400)
@given(path=PATHS, method=METHODS, catch_alls=st.booleans(), root=st.sampled_from(["", "/base"]))
def test_the_candidates_hold_the_route_starlette_would_take(
    path: str, method: str, catch_alls: bool, root: str
) -> None:
    router = IndexedRouter(_table(catch_alls=catch_alls))
    scope = _scope(path, method, root)
    chosen = _first_full(list(router.candidates(path)), scope)
    assert chosen is _first_full(router.routes, scope)


async def _respond(router: Router, scope: Scope) -> tuple[int, bytes, dict[bytes, bytes]]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await router(dict(scope), receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], body, dict(start["headers"])


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/mcp/agent", "POST"),  # a full match among the candidates
        ("/mcp/agent", "GET"),  # 405: the path matches, the method does not
        ("/api/v1/items", "GET"),  # a full match after a partial one
        ("/api/v1/items/", "GET"),  # a redirect without the trailing slash
        ("/healthz/", "GET"),
        ("/static/app.js", "GET"),  # through a mount
        ("/nowhere", "GET"),  # 404
        ("/", "GET"),
        ("", "GET"),
    ],
)
@pytest.mark.parametrize("catch_alls", [False, True])
def test_a_request_gets_the_response_starlettes_router_gives(
    path: str, method: str, catch_alls: bool
) -> None:
    scope = _scope(path, method)
    expected = anyio.run(_respond, Router(_table(catch_alls=catch_alls)), scope)
    assert anyio.run(_respond, IndexedRouter(_table(catch_alls=catch_alls)), scope) == expected


def test_routes_added_after_the_first_request_are_found() -> None:
    router = IndexedRouter(_table(catch_alls=False))
    assert anyio.run(_respond, router, _scope("/late", "GET"))[0] == 404
    router.routes.append(Route("/late", _endpoint("late")))
    assert anyio.run(_respond, router, _scope("/late", "GET"))[:2] == (200, b"late")


def test_the_first_segment_is_what_lies_between_the_first_two_slashes() -> None:
    assert first_segment("/api/v1/tasks") == "api"
    assert first_segment("/healthz") == "healthz"
    assert first_segment("/") == ""
    assert first_segment("//x") == ""
    assert first_segment("") == ""
