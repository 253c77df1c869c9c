"""The route template an HTTP request is timed and traced under (issue #20): the path as the
route table writes it (``/api/v1/clarification/{pending_id}/respond``; a mount's prefix), never
the raw path, and ``unmatched`` for anything no route serves.

Shared by the Prometheus timer and the OpenTelemetry middleware, which sit outside the router:
both read the label once the request was served, from the route Starlette's router left in the
scope (no second pass over the route table per request; a method the route does not serve,
405, counts under its route). Only a request refused before routing — by the Host guard,
authentication or the body limit — is matched against the routes here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from starlette.routing import BaseRoute, Match
from starlette.types import Scope

UNMATCHED: Final = "unmatched"


class RouteLabel:
    """The label of one request: :meth:`before` it runs, :meth:`after` it was served."""

    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        self._routes = routes

    @staticmethod
    def before(scope: Scope) -> object:
        """What the scope says before this app routes it (an embedding host's own router may
        have left its mount there already)."""
        return scope.get("route")

    def after(self, scope: Scope, before: object) -> str:
        """The template of the route that served the request; when this app's router did not
        route it, the route it would have reached; else ``unmatched``."""
        route = scope.get("route")
        if route is None or route is before:
            route = next((r for r in self._routes if r.matches(scope)[0] is Match.FULL), None)
        path = getattr(route, "path", None)
        return path if isinstance(path, str) and path else UNMATCHED


__all__ = ["UNMATCHED", "RouteLabel"]
