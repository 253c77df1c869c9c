"""Whether OpenTelemetry would record a span at all (issue #35), for every adapter that
makes spans: Clarion's own (:mod:`clarion.adapters.otel`) and the MCP SDK's
(:class:`clarion.adapters.mcp.server.SpansWhileTracing`)."""

from __future__ import annotations

from typing import Final

from opentelemetry import trace
from opentelemetry.trace import TracerProvider

_SILENT_PROVIDERS: Final = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)


def records(provider: TracerProvider | None = None) -> bool:
    """False while spans of ``provider`` (default: the global one) would go nowhere: the host
    has not set a global provider yet (OpenTelemetry's proxy), or it is the no-op one. Ask
    on every span: a host may set its provider after Clarion was built."""
    chosen = provider if provider is not None else trace.get_tracer_provider()
    return not isinstance(chosen, _SILENT_PROVIDERS)
