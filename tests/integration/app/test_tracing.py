"""Issue #20: OpenTelemetry spans, checked with the SDK's in-memory exporter — one answer
gives the resolver's span tree (authorize, validate, claim, deliver under resolve), every
span carries the ``pending_id``, and no attribute carries answer or question text."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from clarion.adapters.events.fanout import InProcessEventBus
from clarion.adapters.memory import InMemoryClaimRepository, InMemoryHostRepository, InMemoryStore
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.otel import OtelTracer
from clarion.adapters.resume import OutboxResumeDispatcher
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.services import build_services
from clarion.domain.model import Answer, Identity, Outcome
from clarion.domain.questions import OptionDraft, QuestionDraft
from clarion.domain.resolved_by import Surface

SECRET_ANSWER = "the launch codes are 0000"
SECRET_PROMPT = "Which vault holds the codes?"


def _attributes(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


@pytest.mark.anyio
async def test_one_answer_gives_the_resolvers_span_tree_without_any_answer_text() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store, clock, ids = InMemoryStore(), SystemClock(), UuidIds()
    claims = InMemoryClaimRepository(store, clock, ids)
    host = InMemoryHostRepository(store, clock, ids)
    services = build_services(
        claims=claims,
        host=host,
        authorizer=HostTaskAuthorizer(host),
        waiters=InMemoryWaiters(),
        dispatcher=OutboxResumeDispatcher(claims),
        events=InProcessEventBus(),
        clock=clock,
        ids=ids,
        tracer=OtelTracer(provider),
    )
    me = Identity.internal()
    task = await services.host.create_task(me, "t")
    created = await services.host.create_session(me, task.id)
    drafts = (
        QuestionDraft(prompt=SECRET_PROMPT, options=(OptionDraft("A", "a"), OptionDraft("B", "b"))),
    )
    pending_id = await services.asking.create(me, created.session.id, drafts, "")
    outcome = Outcome.answer(Answer("q1", ("q1_opt1",), SECRET_ANSWER))

    await services.resolver.resolve(me, pending_id, outcome, surface=Surface.MCP)

    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {
        "clarion.resolve",
        "clarion.authorize",
        "clarion.validate",
        "clarion.claim",
        "clarion.deliver",
    }
    root = spans["clarion.resolve"]
    assert root.parent is None
    assert root.context is not None
    for name in ("clarion.authorize", "clarion.validate", "clarion.claim", "clarion.deliver"):
        parent = spans[name].parent
        assert parent is not None
        assert parent.span_id == root.context.span_id, name
    assert _attributes(root) == {"pending_id": pending_id, "surface": "mcp"}
    for span in spans.values():
        attributes = _attributes(span)
        assert attributes["pending_id"] == pending_id
        text = repr(attributes)
        assert SECRET_ANSWER not in text
        assert SECRET_PROMPT not in text


@pytest.mark.anyio
async def test_without_a_configured_provider_spans_record_nothing() -> None:
    """The API's default provider: non-recording spans, so nothing could be exported."""
    tracer = OtelTracer()
    with tracer.span("clarion.resolve", pending_id="p"):
        from opentelemetry import trace

        assert not trace.get_current_span().is_recording()


def test_each_http_request_is_a_server_span_named_by_its_route_template() -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from clarion.adapters.otel import TracingMiddleware

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hi", status_code=201)

    app = Starlette(routes=[Route("/things/{thing_id}/respond", hello, methods=["POST"])])
    app.add_middleware(TracingMiddleware, tracer=OtelTracer(provider), routes=app.routes)
    with TestClient(app) as client:
        assert client.post("/things/secret-id/respond").status_code == 201
        assert client.get("/nowhere").status_code == 404
        assert client.request("X-INVENTED-42", "/things/a/respond").status_code == 405
    first, second, invented = exporter.get_finished_spans()
    assert first.name == "POST /things/{thing_id}/respond"
    assert _attributes(first) == {
        "http.request.method": "POST",
        "http.route": "/things/{thing_id}/respond",
        "http.response.status_code": 201,
    }
    assert second.name == "GET unmatched"
    # #29 S3: an invented method is "_OTHER" (OpenTelemetry's convention), never as sent; the
    # path is a route's, so the 405 is named by its template.
    assert invented.name == "HTTP /things/{thing_id}/respond"
    assert _attributes(invented)["http.request.method"] == "_OTHER"
