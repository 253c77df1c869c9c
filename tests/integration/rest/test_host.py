"""The reference host's routes: shapes, T1/T2 on the task list, and what turns and session
states do to bundles (supersede, detach, expire)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.integration.rest.harness import (
    Caller,
    RestWorld,
    answers,
    ask,
    error_of,
    field_of,
    ok,
)

enabled_only = pytest.mark.parametrize("auth_enabled", [True], ids=["auth-enabled"])


def _is_timestamp(value: object) -> bool:
    return isinstance(value, str) and value.endswith("Z") and bool(datetime.fromisoformat(value))


def listed(client: TestClient, caller: Caller) -> list[str]:
    page = ok(client.get("/api/v1/clarification/pending", headers=caller.headers))
    return [bundle["pending_id"] for bundle in page["bundles"]]


def clarification_rows(client: TestClient, caller: Caller) -> list[dict[str, Any]]:
    messages = ok(
        client.get(f"/api/v1/sessions/{caller.session_id}/messages", headers=caller.headers)
    )["messages"]
    return [m for m in messages if m["type"] == "clarification_request"]


def test_created_resources_have_their_documented_shapes(
    client: TestClient, world: RestWorld, alice: Caller
) -> None:
    workspaces = ok(client.get("/api/v1/workspaces", headers=alice.headers))
    assert workspaces["total"] == 1
    workspace = workspaces["workspaces"][0]
    assert set(workspace) == {"id", "name", "owner_id", "created_at"}
    # A scoped caller owns what it creates; the synthetic caller creates unowned workspaces.
    assert workspace["owner_id"] == (alice.user_id if world.auth_enabled else "")

    task = ok(
        client.post("/api/v1/tasks", json={"title": "loose task"}, headers=alice.headers), 201
    )
    assert task["workspace_id"] == ""
    assert task["task_pending_action"] is None
    assert task["primary_session_pending_action"] is None
    assert _is_timestamp(task["created_at"])

    session = ok(client.post(f"/api/v1/tasks/{task['id']}/sessions", headers=alice.headers), 201)
    assert set(session) == {
        "id",
        "task_id",
        "state",
        "is_primary",
        "created_at",
        "updated_at",
        "current_turn_id",
        "agent_token",
    }
    assert (session["state"], session["is_primary"]) == ("RUNNING", False)
    assert session["agent_token"].startswith("clarion_agt_")
    fetched = ok(client.get(f"/api/v1/sessions/{session['id']}", headers=alice.headers))
    assert "agent_token" not in fetched
    assert fetched["id"] == session["id"]

    turn = ok(client.post(f"/api/v1/sessions/{session['id']}/turns", headers=alice.headers), 201)
    assert set(turn) == {"id", "session_id", "started_at", "created_at", "completed_at"}
    assert turn["completed_at"] is None
    assert turn["id"] != session["current_turn_id"]


@enabled_only
def test_only_an_admin_may_create_an_unowned_workspace_and_nobody_else_may_give_one_away(
    client: TestClient, world: RestWorld, alice: Caller, bob: Caller
) -> None:
    """Issue #14: unowned workspaces are visible to everyone, so only an admin creates them;
    a refused creation writes nothing."""
    before = ok(client.get("/api/v1/workspaces", headers=alice.headers))["total"]
    refused = client.post(
        "/api/v1/workspaces", json={"name": "shared", "owner_id": ""}, headers=alice.headers
    )
    assert refused.status_code == 400
    assert error_of(refused) == "owner_id: only an admin may create an unowned workspace"
    assert ok(client.get("/api/v1/workspaces", headers=alice.headers))["total"] == before
    _, admin = world.bearer("root", is_admin=True)
    shared = ok(
        client.post("/api/v1/workspaces", json={"name": "shared", "owner_id": ""}, headers=admin),
        201,
    )
    assert shared["owner_id"] == ""
    seen = ok(client.get("/api/v1/workspaces", headers=bob.headers))["workspaces"]
    assert shared["id"] in {workspace["id"] for workspace in seen}
    given = client.post(
        "/api/v1/workspaces",
        json={"name": "gift", "owner_id": bob.user_id},
        headers=alice.headers,
    )
    assert given.status_code == 400
    assert field_of(given) == "owner_id"


def test_t1_t2_the_task_list_carries_both_pending_actions_null_when_nothing_is_pending(
    client: TestClient, alice: Caller
) -> None:
    primary = ok(
        client.post(
            f"/api/v1/tasks/{alice.task_id}/sessions",
            json={"is_primary": True},
            headers=alice.headers,
        ),
        201,
    )

    def actions() -> tuple[object, object]:
        tasks = ok(client.get("/api/v1/tasks", headers=alice.headers))
        assert tasks["total"] == len(tasks["tasks"]) == 1
        task = tasks["tasks"][0]
        return task["task_pending_action"], task["primary_session_pending_action"]

    assert actions() == (None, None)
    pending_id = ask(client, alice)  # on the non-primary session
    assert actions() == ("clarification", None)
    on_primary = ok(
        client.post(
            "/api/v1/clarification/request",
            json={
                "session_id": primary["id"],
                "questions": [
                    {"prompt": "p?", "options": [{"label": "a", "description": "a"}] * 2}
                ],
            },
            headers=alice.headers,
        )
    )["pending_id"]
    assert actions() == ("clarification", "clarification")
    for done in (pending_id, on_primary):
        ok(
            client.post(
                f"/api/v1/clarification/{done}/respond",
                json={"rejected": True},
                headers=alice.headers,
            )
        )
    assert actions() == (None, None)


def test_a_newer_turn_supersedes_the_bundle_without_a_write(
    client: TestClient, alice: Caller
) -> None:
    pending_id = ask(client, alice)
    assert listed(client, alice) == [pending_id]
    ok(client.post(f"/api/v1/sessions/{alice.session_id}/turns", headers=alice.headers), 201)
    assert listed(client, alice) == []
    assert [row["metadata"]["status"] for row in clarification_rows(client, alice)] == ["pending"]


def test_completing_the_turn_detaches_and_keeps_the_bundle_answerable(
    client: TestClient, alice: Caller
) -> None:
    pending_id = ask(client, alice)
    complete = f"/api/v1/sessions/{alice.session_id}/turns/current/complete"
    assert ok(client.post(complete, headers=alice.headers)) == {"detached": 1}
    assert ok(client.post(complete, headers=alice.headers)) == {"detached": 0}
    assert [row["metadata"]["agent_disconnected"] for row in clarification_rows(client, alice)] == [
        True
    ]
    assert listed(client, alice) == [pending_id]
    won = ok(
        client.post(
            f"/api/v1/clarification/{pending_id}/respond",
            json={"answers": answers()},
            headers=alice.headers,
        )
    )
    assert won["claimed"] is True
    resumes = ok(client.get(f"/api/v1/sessions/{alice.session_id}/resumes", headers=alice.headers))[
        "resumes"
    ]
    assert len(resumes) == 1
    assert resumes[0]["type"] == "resume"
    assert "Question 1?" in resumes[0]["content"]


def test_a_terminal_session_state_expires_its_bundles(client: TestClient, alice: Caller) -> None:
    ask(client, alice, 2)
    session = ok(
        client.patch(
            f"/api/v1/sessions/{alice.session_id}", json={"state": "FAILED"}, headers=alice.headers
        )
    )
    assert session["state"] == "FAILED"
    assert listed(client, alice) == []
    statuses = [row["metadata"]["status"] for row in clarification_rows(client, alice)]
    assert statuses == ["expired", "expired"]
    refused = client.post(
        "/api/v1/clarification/request",
        json={
            "session_id": alice.session_id,
            "questions": [{"prompt": "p?", "options": [{"label": "a", "description": "a"}] * 2}],
        },
        headers=alice.headers,
    )
    assert refused.status_code == 409


def test_an_unknown_session_task_or_workspace_is_404_with_its_own_text(
    client: TestClient, alice: Caller
) -> None:
    for method, url, text in (
        ("GET", "/api/v1/sessions/nope", "session not found"),
        ("GET", "/api/v1/sessions/nope/messages", "session not found"),
        ("POST", "/api/v1/tasks/nope/sessions", "task not found"),
    ):
        response = client.request(method, url, headers=alice.headers)
        assert (response.status_code, error_of(response)) == (404, text)
    response = client.post(
        "/api/v1/tasks", json={"title": "t", "workspace_id": "nope"}, headers=alice.headers
    )
    assert (response.status_code, error_of(response)) == (404, "workspace not found")
