"""A1–A9 over HTTP, in both auth modes, and the same visibility on the host routes.

With auth enabled alice and bob are real users, each owning a workspace; bob may not see
alice's. With auth disabled both are the same synthetic, unscoped caller (A4).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from starlette.testclient import TestClient

from clarion.ports.testing import row_metadata
from tests.integration.rest.harness import (
    LOCAL_URL,
    Caller,
    RestWorld,
    answers,
    ask,
    error_of,
    ok,
    setup_caller,
)

NOT_FOUND = {"error": "clarification request not found"}
ENDPOINTS = ["", "/wait", "/respond", "/cancel"]
enabled_only = pytest.mark.parametrize("auth_enabled", [True], ids=["auth-enabled"])


def call(client: TestClient, caller: Caller, pending_id: str, suffix: str) -> Any:
    url = f"/api/v1/clarification/{pending_id}{suffix}"
    if suffix in ("/respond", "/cancel"):
        return client.post(url, json={"answers": answers()}, headers=caller.headers)
    return client.get(url, headers=caller.headers)


def fabricated() -> str:
    return str(uuid.uuid4())


@enabled_only
@pytest.mark.parametrize("suffix", ENDPOINTS)
def test_a3_a7_a_foreign_and_a_fabricated_pending_id_get_identical_bytes(
    client: TestClient, alice: Caller, bob: Caller, suffix: str
) -> None:
    """A3, A5, A5a, A7: 404, never 403, and nothing that tells the two apart."""
    pending_id = ask(client, alice)
    foreign = call(client, bob, pending_id, suffix)
    made_up = call(client, bob, fabricated(), suffix)
    assert foreign.status_code == made_up.status_code == 404
    assert foreign.content == made_up.content
    assert foreign.json() == NOT_FOUND
    for secret in ("Question 1?", "Choice 1", alice.task_id, alice.session_id):
        assert secret not in foreign.text


@enabled_only
def test_a5a_wait_on_a_foreign_bundle_and_on_a_fabricated_id_give_the_same_status_and_body(
    client: TestClient, alice: Caller, bob: Caller
) -> None:
    """The oracle A5a closes: 404 for foreign must not sit next to 504 for nonexistent."""
    pending_id = ask(client, alice)
    foreign = client.get(f"/api/v1/clarification/{pending_id}/wait", headers=bob.headers)
    made_up = client.get(f"/api/v1/clarification/{fabricated()}/wait", headers=bob.headers)
    assert foreign.status_code == made_up.status_code
    assert foreign.content == made_up.content


@enabled_only
def test_a1_a_foreign_answer_claims_nothing(client: TestClient, alice: Caller, bob: Caller) -> None:
    pending_id = ask(client, alice)
    assert call(client, bob, pending_id, "/respond").status_code == 404
    body = ok(call(client, alice, pending_id, "/respond"))
    assert body["claimed"] is True


@enabled_only
def test_a2_a9_a_foreign_cancel_cancels_nothing(
    client: TestClient, alice: Caller, bob: Caller
) -> None:
    pending_id = ask(client, alice)
    assert call(client, bob, pending_id, "/cancel").status_code == 404
    assert ok(call(client, alice, pending_id, ""))["pending_id"] == pending_id
    assert ok(call(client, alice, pending_id, "/respond"))["claimed"] is True


def test_a9_cancel_is_authorized_but_never_claimed(client: TestClient, alice: Caller) -> None:
    """Cancel marks the rows cancelled without a winner: a later answer is the 409 no-winner
    branch, not a replay; cancel needs the live entry (404 without it, 409 once settled)."""
    pending_id = ask(client, alice)
    assert ok(call(client, alice, pending_id, "/cancel")) == {"success": True}
    response = call(client, alice, pending_id, "/respond")
    assert response.status_code == 409
    assert call(client, alice, pending_id, "/cancel").json() == NOT_FOUND
    messages = ok(
        client.get(f"/api/v1/sessions/{alice.session_id}/messages", headers=alice.headers)
    )["messages"]
    statuses = [m["metadata"]["status"] for m in messages if m["type"] == "clarification_request"]
    assert statuses == ["cancelled"]


def test_a4_every_caller_is_authorized_when_auth_is_disabled() -> None:
    """A4: with auth disabled nobody is newly denied — a caller with no credentials at all
    reads, waits on and answers any bundle."""
    world = RestWorld.build(auth_enabled=False)
    with TestClient(world.app, base_url=LOCAL_URL) as client:
        alice = setup_caller(client, world, "alice")
        pending_id = ask(client, alice)
        stranger = Caller("", {}, "", "", "")
        assert ok(call(client, stranger, pending_id, ""))["task_id"] == alice.task_id
        assert ok(call(client, stranger, pending_id, "/respond"))["claimed"] is True


def test_a4_the_six_deliberate_changes_are_present(
    client: TestClient, world: RestWorld, alice: Caller
) -> None:
    """A4's exhaustive list, asserted present (in both auth modes: one code path), plus the
    one thing A4 says stays: 409 for a genuinely inactive bundle."""
    # 1. A duplicate answer is a 200 replay with claimed: false, not a 409.
    pending_id = ask(client, alice)
    ok(call(client, alice, pending_id, "/respond"))
    duplicate = ok(call(client, alice, pending_id, "/respond"))
    assert duplicate["claimed"] is False
    # 2. Success bodies carry claimed, status and response.
    assert {"claimed", "status", "response", "success"} <= set(duplicate)
    # 3. A pending id with no durable messages is 404 on respond.
    assert call(client, alice, fabricated(), "/respond").json() == NOT_FOUND
    # 4. The new validation rules: unknown option ids, rejected with answers, over-long text.
    fresh = ask(client, alice, 2)
    for body in (
        {"answers": [{"question_id": "q1", "selected_options": ["zz"]}, {"question_id": "q2"}]},
        {"rejected": True, "answers": answers(2)},
        {"rejected": True, "reject_reason": "x" * 2001},
        {"answers": [{"question_id": "q1", "custom_text": "x" * 2001}, {"question_id": "q2"}]},
    ):
        response = client.post(
            f"/api/v1/clarification/{fresh}/respond", json=body, headers=alice.headers
        )
        assert response.status_code == 400, body
    # 5. A bundle whose rows carry no question_id is rejected before the claim (400, not 500).
    turn = world.ports.host.current_turn(alice.session_id)
    assert turn is not None
    world.ports.host.append_message(
        alice.session_id,
        turn_id=turn.id,
        content="legacy",
        type="clarification_request",
        metadata=row_metadata("legacy", question_id=None, question=None),
    )
    legacy = client.post(
        "/api/v1/clarification/legacy/respond", json={"rejected": True}, headers=alice.headers
    )
    assert legacy.status_code == 400
    # 6. GET /:id/wait on a pending id with no durable messages is 404, not 504.
    assert call(client, alice, fabricated(), "/wait").json() == NOT_FOUND
    # Unchanged: 409 for a bundle that is inactive with no winner.
    ok(client.post(f"/api/v1/sessions/{alice.session_id}/turns", headers=alice.headers), 201)
    superseded = client.post(
        f"/api/v1/clarification/{fresh}/respond",
        json={"answers": answers(2)},
        headers=alice.headers,
    )
    assert superseded.status_code == 409


def test_a7_an_authorized_caller_without_a_live_entry_gets_404_and_504(
    client: TestClient, alice: Caller
) -> None:
    """A7: after authorization, today's behaviour — GET 404 and wait 504 once nobody waits
    (here: the turn completed, so the bundle is detached but still answerable)."""
    pending_id = ask(client, alice)
    detached = ok(
        client.post(
            f"/api/v1/sessions/{alice.session_id}/turns/current/complete", headers=alice.headers
        )
    )
    assert detached == {"detached": 1}
    assert call(client, alice, pending_id, "").json() == NOT_FOUND
    waited = call(client, alice, pending_id, "/wait")
    assert waited.status_code == 504
    assert pending_id in error_of(waited)
    assert ok(call(client, alice, pending_id, "/respond"))["claimed"] is True


def test_a7_wait_ends_with_504_when_its_timeout_elapses(auth_enabled: bool) -> None:
    world = RestWorld.build(auth_enabled=auth_enabled, ask_timeout=0.05)
    with TestClient(world.app, base_url=LOCAL_URL) as client:
        alice = setup_caller(client, world, "alice")
        pending_id = ask(client, alice)
        waited = call(client, alice, pending_id, "/wait")
        assert waited.status_code == 504
        assert "timed out" in error_of(waited)


@enabled_only
def test_creating_a_bundle_in_a_session_the_caller_may_not_see_is_the_missing_session_404(
    client: TestClient, alice: Caller, bob: Caller
) -> None:
    """Unlike upstream (§9.20): POST /request authorizes the session."""
    body = {"questions": [{"prompt": "p?", "options": [{"label": "a", "description": "b"}] * 2}]}
    foreign = client.post(
        "/api/v1/clarification/request",
        json={**body, "session_id": alice.session_id},
        headers=bob.headers,
    )
    made_up = client.post(
        "/api/v1/clarification/request",
        json={**body, "session_id": fabricated()},
        headers=bob.headers,
    )
    assert foreign.status_code == made_up.status_code == 404
    assert foreign.content == made_up.content == b'{"error":"session not found"}'


@enabled_only
@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("GET", "", None),
        ("PATCH", "", {"state": "IDLE"}),
        ("POST", "/turns", None),
        ("POST", "/turns/current/complete", None),
        ("GET", "/messages", None),
        ("GET", "/resumes", None),
    ],
)
def test_a_session_the_caller_may_not_see_is_the_same_404_as_a_missing_one(
    client: TestClient,
    alice: Caller,
    bob: Caller,
    method: str,
    suffix: str,
    body: dict[str, str] | None,
) -> None:
    responses = [
        client.request(
            method, f"/api/v1/sessions/{session_id}{suffix}", json=body, headers=bob.headers
        )
        for session_id in (alice.session_id, fabricated())
    ]
    assert [r.status_code for r in responses] == [404, 404]
    assert responses[0].content == responses[1].content == b'{"error":"session not found"}'


@enabled_only
def test_tasks_and_workspaces_the_caller_may_not_see_are_absent_or_404(
    client: TestClient, alice: Caller, bob: Caller
) -> None:
    tasks = ok(client.get("/api/v1/tasks", headers=bob.headers))["tasks"]
    assert [task["id"] for task in tasks] == [bob.task_id]
    workspaces = ok(client.get("/api/v1/workspaces", headers=bob.headers))["workspaces"]
    assert [workspace["id"] for workspace in workspaces] == [bob.workspace_id]
    filtered = ok(
        client.get(
            "/api/v1/tasks", params={"workspace_id": alice.workspace_id}, headers=bob.headers
        )
    )
    assert filtered == {"tasks": [], "total": 0, "next_cursor": ""}
    for workspace_id in (alice.workspace_id, fabricated()):
        response = client.post(
            "/api/v1/tasks", json={"title": "t", "workspace_id": workspace_id}, headers=bob.headers
        )
        assert (response.status_code, response.content) == (
            404,
            b'{"error":"workspace not found"}',
        )
    for task_id in (alice.task_id, fabricated()):
        response = client.post(f"/api/v1/tasks/{task_id}/sessions", json={}, headers=bob.headers)
        assert (response.status_code, response.content) == (404, b'{"error":"task not found"}')


def test_l1_the_pending_list_shows_exactly_the_bundles_the_caller_may_see(
    client: TestClient, world: RestWorld, alice: Caller, bob: Caller
) -> None:
    mine = ask(client, alice)
    theirs = ask(client, bob)
    listed = ok(client.get("/api/v1/clarification/pending", headers=bob.headers))
    seen = {bundle["pending_id"] for bundle in listed["bundles"]}
    assert seen == ({theirs} if world.auth_enabled else {mine, theirs})
    assert listed["count"] == len(listed["bundles"])
