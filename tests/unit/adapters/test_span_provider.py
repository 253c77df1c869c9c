"""Spans are made only while OpenTelemetry records (issue #35): Clarion's own and the MCP
SDK's per-request span, which every MCP request (a parked agent's ``tasks/get`` poll among
them) used to build for nothing when no provider is installed."""

from __future__ import annotations

from typing import Any, cast

import pytest
from mcp.server._otel import OpenTelemetryMiddleware
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from clarion.adapters import span_provider
from clarion.adapters.mcp.server import SpansWhileTracing, build_server

pytestmark = pytest.mark.anyio


def test_only_a_real_provider_records() -> None:
    assert span_provider.records(TracerProvider())
    assert not span_provider.records(trace.NoOpTracerProvider())
    assert not span_provider.records(trace.ProxyTracerProvider())


def test_the_global_provider_is_asked_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host may install its provider after Clarion was built."""
    monkeypatch.setattr(trace, "get_tracer_provider", trace.ProxyTracerProvider)
    assert not span_provider.records()
    monkeypatch.setattr(trace, "get_tracer_provider", TracerProvider)
    assert span_provider.records()


def test_every_server_runs_the_sdks_spans_behind_the_gate() -> None:
    server = build_server("clarion-test", "1", [])
    assert not any(isinstance(m, OpenTelemetryMiddleware) for m in server.middleware)
    assert sum(isinstance(m, SpansWhileTracing) for m in server.middleware) == 1


class _Spans:
    """Stands for the SDK's span middleware: counts the requests it wrapped."""

    def __init__(self) -> None:
        self.wrapped = 0

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        self.wrapped += 1
        return await call_next(ctx)


@pytest.mark.parametrize(
    ("provider", "wrapped"), [(trace.ProxyTracerProvider, 0), (TracerProvider, 1)]
)
async def test_the_sdks_span_is_made_only_while_a_provider_records(
    monkeypatch: pytest.MonkeyPatch, provider: Any, wrapped: int
) -> None:
    monkeypatch.setattr(trace, "get_tracer_provider", provider)
    spans = _Spans()
    handled: list[object] = []

    async def call_next(ctx: object) -> str:
        handled.append(ctx)
        return "result"

    request = object()
    gate = SpansWhileTracing(spans)
    result: object = await gate(cast(Any, request), cast(Any, call_next))
    assert result == "result"
    assert handled == [request]
    assert spans.wrapped == wrapped
