"""Spans for the resolver's steps, MCP tool calls and HTTP requests (issue #20).

Attributes are ids and small vocabularies only — ``pending_id``, ``surface``, ``tool``, the
route template, method and status — never question or answer text (docs/observability.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Final

from opentelemetry import trace
from opentelemetry.trace import SpanKind, TracerProvider
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.adapters import span_provider
from clarion.adapters.route_label import RouteLabel

INSTRUMENTATION: Final = "clarion"
# OpenTelemetry's HTTP conventions: a method outside the known set is recorded as "_OTHER" and
# the span is named "HTTP <route>", so an invented method never becomes a span name or an
# attribute value (#29 S3; the original is not recorded either: it is the caller's text).
KNOWN_METHODS: Final = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}
)
OTHER_METHOD: Final = "_OTHER"


class OtelTracer:
    """The Tracer port over ``provider`` (default: the global provider, set by the host)."""

    def __init__(self, provider: TracerProvider | None = None) -> None:
        self._provider = provider
        self._tracer = trace.get_tracer(INSTRUMENTATION, tracer_provider=provider)

    def span(self, name: str, **attributes: str) -> AbstractContextManager[None]:
        if not self.may_record():
            return nullcontext()
        return self._span(name, attributes)

    def may_record(self) -> bool:
        """False while spans would go nowhere: no provider was given and the host has not set
        a global one yet (OpenTelemetry's proxy), or the provider is the no-op one. Asked on
        every span, since the host may set its provider after Clarion was built; skipping a
        span then skips only the non-recording span OpenTelemetry would have made, whose
        context is the current one's (#35: a few µs per request with no SDK installed)."""
        return span_provider.records(self._provider)

    @contextmanager
    def _span(self, name: str, attributes: dict[str, str]) -> Iterator[None]:
        with self._tracer.start_as_current_span(name, attributes=attributes):
            yield

    @property
    def tracer(self) -> trace.Tracer:
        return self._tracer


class TracingMiddleware:
    """Pure ASGI middleware: one server span per HTTP request, named ``METHOD template``
    (``HTTP template`` for a method outside the known set). The template is the route that
    served the request (:class:`~clarion.adapters.route_label.RouteLabel`), so the span is
    named once the request was served; until then it bears the method alone, as OpenTelemetry's
    HTTP conventions name a span whose route is not known. While the tracer cannot record
    (:meth:`OtelTracer.may_record`) the request passes straight through."""

    def __init__(self, app: ASGIApp, *, tracer: OtelTracer, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self._otel = tracer
        self._tracer = tracer.tracer
        self._label = RouteLabel(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._otel.may_record():
            await self.app(scope, receive, send)
            return
        sent = str(scope.get("method", ""))
        method = sent if sent in KNOWN_METHODS else OTHER_METHOD
        verb = "HTTP" if method == OTHER_METHOD else method
        routed_before = self._label.before(scope)
        with self._tracer.start_as_current_span(
            verb, kind=SpanKind.SERVER, attributes={"http.request.method": method}
        ) as span:

            async def recording(message: Message) -> None:
                if message["type"] == "http.response.start":
                    span.set_attribute("http.response.status_code", int(message["status"]))
                await send(message)

            try:
                await self.app(scope, receive, recording)
            finally:
                route = self._label.after(scope, routed_before)
                span.set_attribute("http.route", route)
                span.update_name(f"{verb} {route}")


__all__ = ["OtelTracer", "TracingMiddleware"]
