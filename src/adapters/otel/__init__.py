"""OpenTelemetry traces (issue #20; the optional extra ``clarion[otel]``): the
:class:`~clarion.ports.telemetry.Tracer` over an OpenTelemetry tracer and a span per HTTP
request. Spans go wherever the host's tracer provider sends them; with none configured (the
API's default provider) they are non-recording and nothing is sent."""

from clarion.adapters.otel.tracing import OtelTracer, TracingMiddleware

__all__ = ["OtelTracer", "TracingMiddleware"]
