"""Issue #30, nothing vanishes: a bundle closed without an answer — here superseded by the
turn a resume starts, or by REST startTurn — is in the history with its reason, is announced
on the event stream, in the log and to the notification outbox, and a late answer is told why
(the 409 body R10/R11 pin is unchanged; the reason travels in ``Clarion-Closed-Reason``).
Every test runs in both auth modes."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest
import structlog
from starlette.testclient import TestClient

from clarion.adapters.memory import InMemoryClaimRepository
from clarion.app.usecases import publishing
from clarion.domain.notifications import SUPERSEDED_EVENT
from clarion.ports.events import Event
from tests.integration.rest.harness import Caller, RestWorld, answers, ask, ok

RESOLVED = "/api/v1/clarification/resolved"
NOT_ACTIVE = {"error": "clarification request is no longer active"}


def respond(client: TestClient, caller: Caller, pending_id: str, count: int = 1) -> Any:
    return client.post(
        f"/api/v1/clarification/{pending_id}/respond",
        json={"answers": answers(count)},
        headers=caller.headers,
    )


@pytest.fixture(name="published")
def fixture_published(world: RestWorld, monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    """Every event the application publishes, in order."""
    seen: list[Event] = []
    publish = world.bus.publish

    def record(event: Event) -> None:
        seen.append(event)
        publish(event)

    monkeypatch.setattr(world.bus, "publish", record)
    return seen


@pytest.fixture(name="logs")
def fixture_logs(monkeypatch: pytest.MonkeyPatch) -> list[MutableMapping[str, Any]]:
    """What the publishing use case logs, captured at its own logger: the global structlog
    configuration (which an in-process CLI test may have set, with cached loggers and a level
    filter that drops info lines) is not this test's to rely on, hence its own wrapper class."""
    capture = structlog.testing.LogCapture()
    logger = structlog.wrap_logger(None, processors=[capture], wrapper_class=structlog.BoundLogger)
    monkeypatch.setattr(publishing, "log", logger)
    return capture.entries


def recorded_events(world: RestWorld, pending_id: str) -> list[str]:
    claims = world.ports.claims
    assert isinstance(claims, InMemoryClaimRepository)
    outbox = claims._store.notification_outbox.values()
    return [entry.event for entry in outbox if entry.pending_id == pending_id]


def test_answering_one_bundle_with_no_agent_waiting_closes_the_other_visibly(
    client: TestClient,
    world: RestWorld,
    alice: Caller,
    published: list[Event],
    logs: list[MutableMapping[str, Any]],
) -> None:
    """The issue's exact scenario: two pending bundles in one session, nobody waiting;
    answering one resumes the agent on a new turn, which supersedes the other."""
    answered = ask(client, alice)
    other = ask(client, alice, 2)
    assert ok(respond(client, alice, answered))["claimed"] is True
    pending = ok(client.get("/api/v1/clarification/pending", headers=alice.headers))
    assert [b["pending_id"] for b in pending["bundles"]] == []

    # The history: by default what it always held; with include=closed the closed one too.
    default = ok(client.get(RESOLVED, headers=alice.headers))
    assert [b["pending_id"] for b in default["bundles"]] == [answered]
    history = ok(client.get(f"{RESOLVED}?include=closed", headers=alice.headers))
    assert [b["pending_id"] for b in history["bundles"]] == [other, answered]
    closed, resolved = history["bundles"]
    assert resolved == default["bundles"][0]  # an answered entry is unchanged
    assert closed["status"] == "closed"
    assert closed["closed_reason"] == "superseded"
    assert closed["closed_at"] == closed["resolved_at"]
    assert closed["response"] is None
    assert closed["resolved_by"] is None
    assert [q["question_id"] for q in closed["questions"]] == ["q1", "q2"]
    assert history["count"] == 2

    # The event stream, the log and the notification outbox each say so.
    superseded = [e for e in published if e.kind == "bundle.superseded"]
    assert [(e.pending_id, e.session_id, e.data["reason"]) for e in superseded] == [
        (other, alice.session_id, "superseded")
    ]
    closing = [entry for entry in logs if entry["event"] == "clarification.closed"]
    assert [(e["pending_id"], e["reason"], e["log_level"]) for e in closing] == [
        (other, "superseded", "info")
    ]
    assert SUPERSEDED_EVENT in recorded_events(world, other)
    assert SUPERSEDED_EVENT not in recorded_events(world, answered)

    # A late answer: the pinned body, and why beside it.
    late = respond(client, alice, other, 2)
    assert late.status_code == 409
    assert late.json() == NOT_ACTIVE
    assert late.headers["Clarion-Closed-Reason"] == "superseded"


def test_rest_start_turn_closes_the_pending_bundles_visibly(
    client: TestClient,
    world: RestWorld,
    alice: Caller,
    published: list[Event],
    logs: list[MutableMapping[str, Any]],
) -> None:
    pending_id = ask(client, alice)
    turn = ok(client.post(f"/api/v1/sessions/{alice.session_id}/turns", headers=alice.headers), 201)
    [event] = [e for e in published if e.kind == "bundle.superseded"]
    assert (event.pending_id, event.data) == (
        pending_id,
        {"reason": "superseded", "turn_id": turn["id"]},
    )
    assert [e["pending_id"] for e in logs if e["event"] == "clarification.closed"] == [pending_id]
    assert recorded_events(world, pending_id).count(SUPERSEDED_EVENT) == 1
    history = ok(client.get(f"{RESOLVED}?include=closed", headers=alice.headers))
    [closed] = history["bundles"]
    assert (closed["closed_reason"], closed["closed_at"]) == ("superseded", turn["started_at"])
    late = respond(client, alice, pending_id)
    assert (late.status_code, late.json()) == (409, NOT_ACTIVE)
    assert late.headers["Clarion-Closed-Reason"] == "superseded"


def test_a_terminal_session_and_a_cancel_give_their_own_reasons(
    client: TestClient, alice: Caller
) -> None:
    ended = ask(client, alice)
    ok(
        client.patch(
            f"/api/v1/sessions/{alice.session_id}",
            json={"state": "COMPLETED"},
            headers=alice.headers,
        )
    )
    late = respond(client, alice, ended)
    assert (late.status_code, late.json()) == (409, NOT_ACTIVE)
    assert late.headers["Clarion-Closed-Reason"] == "session_ended"
    history = ok(client.get(f"{RESOLVED}?include=closed", headers=alice.headers))
    assert [(b["pending_id"], b["closed_reason"]) for b in history["bundles"]] == [
        (ended, "session_ended")
    ]


def test_include_takes_only_closed(client: TestClient, alice: Caller) -> None:
    response = client.get(f"{RESOLVED}?include=everything", headers=alice.headers)
    assert response.status_code == 400
    assert response.json() == {"error": "include: must be closed", "field": "include"}


def test_a_foreign_closed_bundle_is_absent(
    client: TestClient, world: RestWorld, alice: Caller, bob: Caller
) -> None:
    if not world.auth_enabled:
        pytest.skip("without auth every caller is unscoped and sees everything")
    pending_id = ask(client, alice)
    ok(client.post(f"/api/v1/sessions/{alice.session_id}/turns", headers=alice.headers), 201)
    theirs = ok(client.get(f"{RESOLVED}?include=closed", headers=bob.headers))
    assert theirs["bundles"] == []
    mine = ok(client.get(f"{RESOLVED}?include=closed", headers=alice.headers))
    assert [b["pending_id"] for b in mine["bundles"]] == [pending_id]
