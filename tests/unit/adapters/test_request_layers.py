"""The per-request shortcuts of the layers in front of every route (issue #35): headers read
once per request, the request id and its binding, and no span work while spans go nowhere —
each answering exactly as the longer way did."""

from __future__ import annotations

import re
from typing import Any

import pytest
import structlog
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.datastructures import Headers
from starlette.types import Message, Receive, Scope, Send

from clarion.adapters.http_guard import request_headers
from clarion.adapters.otel import OtelTracer, TracingMiddleware
from clarion.adapters.rest import request_log
from clarion.adapters.rest.parameters import parameters_are_storable
from clarion.adapters.rest.request_log import RequestLogMiddleware

RAW = [
    (b"host", b"127.0.0.1:8000"),
    (b"x-twice", b"first"),
    (b"content-type", b"application/json"),
    (b"x-twice", b"second"),
    (b"x-latin", "caf\u00e9".encode("latin-1")),
    (b"X-Upper", b"kept as sent"),
]


def _scope(**extra: Any) -> dict[str, Any]:
    return {"type": "http", "method": "GET", "path": "/x", "headers": list(RAW), **extra}


@pytest.mark.parametrize("name", ["host", "x-twice", "content-type", "x-latin", "x-upper", "none"])
def test_request_headers_answer_as_starlettes_headers_do(name: str) -> None:
    scope = _scope()
    assert request_headers(scope).get(name) == Headers(scope=scope).get(name)
    assert (name in request_headers(scope)) == (name in Headers(scope=scope))


def test_request_headers_are_read_once_per_header_list() -> None:
    scope = _scope()
    first = request_headers(scope)
    assert request_headers(scope) is first
    scope["headers"] = [(b"host", b"example.org")]  # a layer replacing the headers
    assert request_headers(scope) == {"host": "example.org"}


async def _answer(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _served(app: Any, scope: dict[str, Any]) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("offered", "echoed"),
    [(None, None), (b"abc-123.X_y", "abc-123.X_y"), (b"not acceptable!", None), (b"x" * 65, None)],
)
async def test_the_request_id_is_the_callers_short_token_or_32_new_hex_digits(
    offered: bytes | None, echoed: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh module logger: one first used under another test's configuration (the CLI's
    # configure_logging caches loggers on first use) would log past capture_logs.
    monkeypatch.setattr(request_log, "log", structlog.get_logger(request_log.__name__))
    seen: dict[str, object] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.update(structlog.contextvars.get_contextvars())
        await _answer(scope, receive, send)

    scope = _scope()
    if offered is not None:
        scope["headers"].append((b"x-request-id", offered))
    structlog.contextvars.bind_contextvars(request_id="outer")
    try:
        with structlog.testing.capture_logs() as lines:
            sent = await _served(RequestLogMiddleware(app), scope)
        after = structlog.contextvars.get_contextvars().get("request_id")
    finally:
        structlog.contextvars.unbind_contextvars("request_id")
    header = dict(sent[0]["headers"])[b"x-request-id"].decode()
    if echoed is None:
        assert re.fullmatch(r"[0-9a-f]{32}", header)
    else:
        assert header == echoed
    assert seen["request_id"] == header  # bound while serving
    assert after == "outer"  # and what was bound before is back afterwards
    (line,) = lines
    assert line["event"] == "http_request"
    assert line["request_id"] == header
    assert (line["method"], line["path"], line["status"]) == ("GET", "/x", 200)


@pytest.mark.parametrize(
    ("path", "query", "storable"),
    [
        ("/api/v1/x", b"", True),
        ("/api/v1/x", b"a=1&b=", True),
        ("/api/v1/\x00", b"", False),
        ("/api/v1/x", b"a=%00", False),
        ("/api/v1/x", b"%ED%A0%80=1", True),  # invalid UTF-8 decodes to U+FFFD, storable
    ],
)
def test_storable_parameters_with_and_without_a_query(
    path: str, query: bytes, storable: bool
) -> None:
    assert parameters_are_storable({"path": path, "query_string": query}) is storable


def test_spans_may_record_only_with_a_provider_that_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert OtelTracer(TracerProvider()).may_record()
    assert not OtelTracer(trace.NoOpTracerProvider()).may_record()
    global_tracer = OtelTracer()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())
    assert not global_tracer.may_record()
    monkeypatch.setattr(trace, "get_tracer_provider", TracerProvider)
    assert global_tracer.may_record()  # the host set its provider after Clarion was built


@pytest.mark.anyio
async def test_a_request_is_traced_with_a_recording_provider_and_passes_untouched_without() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    traced = TracingMiddleware(_answer, tracer=OtelTracer(provider), routes=[])
    silent = TracingMiddleware(_answer, tracer=OtelTracer(trace.NoOpTracerProvider()), routes=[])
    assert [m["type"] for m in await _served(silent, _scope())] == [
        "http.response.start",
        "http.response.body",
    ]
    assert exporter.get_finished_spans() == ()
    await _served(traced, _scope())
    (span,) = exporter.get_finished_spans()
    assert span.name == "GET unmatched"
    assert dict(span.attributes or {})["http.response.status_code"] == 200
