"""The contract documents: ``/openapi.json`` covers exactly the routes the application
serves, real responses of a whole session conform to it, ``docs/rest-api.md`` agrees with it,
and every request is logged with its id, method, path, status and duration — never a body."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import structlog
from starlette.routing import Route
from starlette.testclient import TestClient

from clarion.adapters.rest import create_rest_app, errors, request_log
from clarion.adapters.rest.openapi import openapi_document
from tests.integration.rest.harness import LOCAL_URL, Caller, RestWorld, answers, ok, questions

DOC = Path(__file__).parents[3] / "docs" / "rest-api.md"


def _operations(document: dict[str, Any]) -> dict[str, list[str]]:
    return {
        f"{method.upper()} {path}": sorted(operation["responses"])
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    }


def test_the_document_describes_exactly_the_routes_the_application_serves(
    world: RestWorld, client: TestClient
) -> None:
    served = {
        f"{method} {route.path}"
        for route in world.app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }
    document = ok(client.get("/openapi.json"))
    assert document == openapi_document(auth_enabled=world.auth_enabled)
    assert document["openapi"] == "3.1.0"
    assert set(_operations(document)) == served


def test_401_is_documented_only_when_authentication_can_produce_it() -> None:
    """The guard's 403 (foreign Origin) and 421 (foreign Host) exist in both modes, on every
    operation but the health check; 415 on every write."""
    enabled = _operations(openapi_document(auth_enabled=True))
    disabled = _operations(openapi_document(auth_enabled=False))
    assert "401" in enabled["GET /api/v1/tasks"]
    assert "401" not in enabled["GET /healthz"]
    assert enabled.keys() == disabled.keys()
    for label in enabled:
        guarded = label != "GET /healthz"
        for codes in (enabled[label], disabled[label]):
            assert ("403" in codes, "421" in codes) == (guarded, guarded), label
            assert ("415" in codes) == label.startswith(("POST", "PATCH", "PUT", "DELETE")), label
    # Login's 401 is a refused token, not a missing identity: it exists in both modes.
    assert disabled.pop("POST /api/v1/auth/login") == enabled["POST /api/v1/auth/login"]
    assert all("401" not in codes for codes in disabled.values())


def test_docs_rest_api_lists_every_operation_with_its_statuses() -> None:
    text = DOC.read_text(encoding="utf-8")
    documented: dict[str, list[str]] = {}
    for heading, statuses in re.findall(
        r"^### ([A-Z]+ \S+)\n.*?^Responses: ([0-9, ]+)\.$", text, flags=re.M | re.S
    ):
        documented[heading] = sorted(s.strip() for s in statuses.split(","))
    assert documented == _operations(openapi_document(auth_enabled=True))


def test_every_response_of_a_whole_session_conforms_to_the_document(
    world: RestWorld, client: TestClient
) -> None:
    """Generated input rarely reaches the happy paths; this walks them and validates each
    response (status, headers, body) against the operation it came from."""
    schema = schemathesis.openapi.from_dict(openapi_document(auth_enabled=world.auth_enabled))
    headers = world.bearer("walker")[1] if world.auth_enabled else {}

    def check(method: str, template: str, response: Any) -> Any:
        schema[template][method].validate_response(response)
        return response.json()

    def call(method: str, template: str, url: str, **kwargs: Any) -> Any:
        return check(method, template, client.request(method, url, headers=headers, **kwargs))

    workspace = call("POST", "/api/v1/workspaces", "/api/v1/workspaces", json={"name": "w"})
    call("GET", "/api/v1/workspaces", "/api/v1/workspaces")
    task = call(
        "POST",
        "/api/v1/tasks",
        "/api/v1/tasks",
        json={"title": "t", "workspace_id": workspace["id"]},
    )
    session = call(
        "POST",
        "/api/v1/tasks/{task_id}/sessions",
        f"/api/v1/tasks/{task['id']}/sessions",
        json={"is_primary": True},
    )
    caller = Caller("", headers, workspace["id"], task["id"], session["id"])
    base = "/api/v1/clarification"
    created = call(
        "POST",
        f"{base}/request",
        f"{base}/request",
        json={"session_id": caller.session_id, "questions": questions(2), "context": "ctx"},
    )
    pending_id = created["pending_id"]
    call("GET", "/api/v1/tasks", "/api/v1/tasks")
    call("GET", f"{base}/pending", f"{base}/pending", params={"limit": 1})
    call("GET", f"{base}/{{pending_id}}", f"{base}/{pending_id}")
    call(
        "POST",
        f"{base}/{{pending_id}}/respond",
        f"{base}/{pending_id}/respond",
        json={"answers": []},
    )
    for _ in range(2):  # winner, then the replaying loser
        call(
            "POST",
            f"{base}/{{pending_id}}/respond",
            f"{base}/{pending_id}/respond",
            json={"answers": answers(2, text="t")},
        )
    call("GET", f"{base}/{{pending_id}}/wait", f"{base}/{pending_id}/wait")  # 504: nobody waits
    call("POST", f"{base}/{{pending_id}}/cancel", f"{base}/{pending_id}/cancel")  # 404
    rejected = call(
        "POST",
        f"{base}/request",
        f"{base}/request",
        json={"session_id": caller.session_id, "questions": questions(1)},
    )["pending_id"]
    call("POST", f"{base}/{{pending_id}}/cancel", f"{base}/{rejected}/cancel")
    call(
        "POST",
        f"{base}/{{pending_id}}/respond",
        f"{base}/{rejected}/respond",
        json={"rejected": True},
    )  # 409
    session_url = f"/api/v1/sessions/{caller.session_id}"
    call("GET", "/api/v1/sessions/{session_id}", session_url)
    call("GET", "/api/v1/sessions/{session_id}/messages", f"{session_url}/messages")
    call("GET", "/api/v1/sessions/{session_id}/resumes", f"{session_url}/resumes")
    call(
        "POST",
        "/api/v1/sessions/{session_id}/turns/current/complete",
        f"{session_url}/turns/current/complete",
    )
    call("POST", "/api/v1/sessions/{session_id}/turns", f"{session_url}/turns")
    call("PATCH", "/api/v1/sessions/{session_id}", session_url, json={"state": "COMPLETED"})
    call("GET", "/api/v1/auth/me", "/api/v1/auth/me")
    call("GET", "/healthz", "/healthz")
    if world.auth_enabled:
        token = headers["Authorization"].removeprefix("Bearer ")
        logged_in = check(
            "POST", "/api/v1/auth/login", client.post("/api/v1/auth/login", json={"token": token})
        )
        check(
            "POST",
            "/api/v1/auth/logout",
            client.post("/api/v1/auth/logout", headers={"X-CSRF-Token": logged_in["csrf_token"]}),
        )
        check("GET", "/api/v1/tasks", client.get("/api/v1/tasks"))  # 401


def test_each_request_is_logged_once_with_its_id_and_never_with_question_text(
    client: TestClient, alice: Caller, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The surface's own loggers, captured directly, with their own wrapper class: the global
    # structlog configuration (which the CLI may have set, with cached loggers) is not this
    # test's to rely on.
    capture = structlog.testing.LogCapture()
    for module in (request_log, errors):
        logger = structlog.wrap_logger(
            None,
            processors=[structlog.contextvars.merge_contextvars, capture],
            wrapper_class=structlog.BoundLogger,
        )
        monkeypatch.setattr(module, "log", logger)
    secret = "What is the launch code?"
    body = {
        "session_id": alice.session_id,
        "questions": [{"prompt": secret, "options": [{"label": "1234", "description": "d"}] * 2}],
    }
    response = client.post(
        "/api/v1/clarification/request",
        json=body,
        headers={**alice.headers, "X-Request-ID": "trace-42"},
    )
    pending_id = ok(response)["pending_id"]
    client.post(
        f"/api/v1/clarification/{pending_id}/respond",
        json={"answers": [{"question_id": "q1", "custom_text": "0000 secret answer"}]},
        headers=alice.headers,
    )
    assert response.headers["x-request-id"] == "trace-42"
    requests = [entry for entry in capture.entries if entry["event"] == "http_request"]
    assert len(requests) == 2
    first = requests[0]
    assert {"request_id", "method", "path", "status", "duration_ms"} <= set(first)
    assert (first["request_id"], first["method"], first["status"]) == ("trace-42", "POST", 200)
    assert first["path"] == "/api/v1/clarification/request"
    assert requests[1]["request_id"] != "trace-42"
    everything = repr(capture.entries)
    for text in (secret, "secret answer", "1234"):
        assert text not in everything


def test_healthz_reports_the_database_check_and_never_needs_an_identity() -> None:
    world = RestWorld.build(auth_enabled=True)
    reachable = [True]

    def database_check() -> None:
        if not reachable[0]:
            raise ConnectionError("connection refused to db.internal:5432")

    app = create_rest_app(
        world.services,
        auth_enabled=True,
        authentication=world.authentication,
        event_source=world.bus,
        database_check=database_check,
    )
    with TestClient(app, base_url=LOCAL_URL) as client:
        assert ok(client.get("/healthz")) == {"status": "ok", "database": "ok"}
        reachable[0] = False
        down = client.get("/healthz")
        assert (down.status_code, down.json()) == (503, {"error": "database unreachable"})
        assert "db.internal" not in down.text
