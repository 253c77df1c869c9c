"""Approvals over REST (issue #33): request, quorum and veto through ``/decision`` and the
generic ``respond`` (202 while undecided), assignment (404 to non-candidates, same bytes as a
missing request), standing approvals, groups administration, and the additive ``approval``
object of pending and history items."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from starlette.testclient import TestClient

from tests.integration.rest.harness import LOCAL_URL, Headers, RestWorld, field_of, ok

API = "/api/v1"
ACTION = {"name": "shell", "arguments": {"command": "rm -rf build", "cwd": "/repo"}}


@attrs.define
class Team:
    """An administrator who asks (in an unowned workspace everyone sees) and three people."""

    client: TestClient
    admin: Headers
    session_id: str
    people: dict[str, Headers]

    def request(self, status: int = 201, **body: Any) -> Any:
        payload = {"session_id": self.session_id, "action": ACTION, **body}
        return ok(
            self.client.post(f"{API}/approvals/request", json=payload, headers=self.admin), status
        )

    def decide(self, who: str, pending_id: str, status: int = 200, **body: Any) -> Any:
        return ok(
            self.client.post(
                f"{API}/approvals/{pending_id}/decision", json=body, headers=self.people[who]
            ),
            status,
        )


@pytest.fixture(name="team")
def fixture_team() -> Iterator[Team]:
    world = RestWorld.build(auth_enabled=True)
    with TestClient(world.app, base_url=LOCAL_URL) as client:
        _, admin = world.bearer("root", is_admin=True)
        workspace = ok(
            client.post(f"{API}/workspaces", json={"name": "ops", "owner_id": ""}, headers=admin),
            201,
        )
        task = ok(
            client.post(
                f"{API}/tasks", json={"title": "t", "workspace_id": workspace["id"]}, headers=admin
            ),
            201,
        )
        session = ok(client.post(f"{API}/tasks/{task['id']}/sessions", json={}, headers=admin), 201)
        people = {name: world.bearer(name)[1] for name in ("alice", "bob", "carol", "dave")}
        yield Team(client, admin, session["id"], people)


def test_quorum_veto_free_and_assignment_over_rest(team: Team) -> None:
    """M-of-N with a group candidate; respond's 202 while undecided; a repeat is not
    counted; a non-candidate gets the same 404 as a missing request."""
    client = team.client
    ok(client.post(f"{API}/groups", json={"name": "oncall"}, headers=team.admin), 201)
    group = ok(client.put(f"{API}/groups/oncall/members/carol", headers=team.admin))
    assert group["members"] == ["carol"]
    view = team.request(
        reason="clean up",
        required_approvals=2,
        candidates={"users": ["alice", "bob"], "groups": ["oncall"]},
    )
    pending_id = view["pending_id"]
    assert view["status"] == "pending"
    assert view["action"] == ACTION
    assert view["action_digest"].startswith("sha256:")
    # Named by name (in the order of the candidates' ids).
    assert sorted(view["candidates"]["users"]) == ["alice", "bob"]
    assert view["candidates"]["groups"] == ["oncall"]
    missing = client.get(f"{API}/approvals/nope", headers=team.people["dave"])
    foreign = client.get(f"{API}/approvals/{pending_id}", headers=team.people["dave"])
    assert (
        (foreign.status_code, foreign.content)
        == (missing.status_code, missing.content)
        == (
            404,
            missing.content,
        )
    )
    respond = client.post(
        f"{API}/clarification/{pending_id}/respond",
        json={"answers": [{"question_id": "decision", "selected_options": ["approve"]}]},
        headers=team.people["alice"],
    )
    assert (respond.status_code, respond.json()) == (
        202,
        {"status": "pending", "approvals": 1, "required": 2, "counted": True},
    )
    repeat = team.decide("alice", pending_id, decision="approve")
    assert (repeat["counted"], repeat["approval"]["approvals"]) == (False, 1)
    assert repeat["vote"]["surface"] == "rest"
    decided = team.decide("carol", pending_id, decision="approve", comment="ok")
    assert decided["approval"]["status"] == "approved"
    assert decided["approval"]["decided_by"]["display_name"] == "carol"
    assert [v["display_name"] for v in decided["approval"]["votes"]] == ["alice", "carol"]
    late = team.decide("bob", pending_id, decision="deny")
    assert (late["counted"], late["vote"], late["approval"]["status"]) == (
        False,
        None,
        "approved",
    )
    listed = ok(client.get(f"{API}/approvals?status=decided", headers=team.people["bob"]))
    assert [a["pending_id"] for a in listed["approvals"]] == [pending_id]
    assert ok(client.get(f"{API}/approvals", headers=team.people["dave"]))["approvals"] == []


def test_a_deny_vetoes_and_the_asker_waits_for_it(team: Team) -> None:
    view = team.request(required_approvals=2, candidates={"users": ["alice", "bob"]})
    pending_id = view["pending_id"]
    waited = ok(
        team.client.get(f"{API}/approvals/{pending_id}/wait?timeout=0.05", headers=team.admin)
    )
    assert waited["status"] == "pending"
    denied = team.decide("bob", pending_id, decision="deny", comment="not today")
    assert (denied["approval"]["status"], denied["approval"]["comment"]) == (
        "denied",
        "not today",
    )
    after = ok(team.client.get(f"{API}/approvals/{pending_id}/wait", headers=team.admin))
    assert (after["decision"], after["decided_by"]["surface"]) == ("deny", "rest")


def test_pending_and_history_items_gain_the_approval_object(team: Team) -> None:
    client = team.client
    plain = ok(
        client.post(
            f"{API}/clarification/request",
            json={
                "session_id": team.session_id,
                "questions": [
                    {
                        "id": "q1",
                        "prompt": "Ship?",
                        "options": [
                            {"label": "Yes", "description": "y"},
                            {"label": "No", "description": "n"},
                        ],
                    }
                ],
            },
            headers=team.admin,
        )
    )["pending_id"]
    view = team.request(reason="why not")
    items = {
        item["pending_id"]: item
        for item in ok(client.get(f"{API}/clarification/pending", headers=team.admin))["bundles"]
    }
    assert "approval" not in items[plain]
    assert items[view["pending_id"]]["approval"] == {
        "action": ACTION,
        "action_digest": view["action_digest"],
        "reason": "why not",
        "required_approvals": 1,
        "approvals": 0,
        "candidates": {"users": [], "groups": []},
    }
    team.decide("alice", view["pending_id"], decision="approve")
    history = ok(client.get(f"{API}/clarification/resolved", headers=team.admin))["bundles"]
    (entry,) = [item for item in history if item["pending_id"] == view["pending_id"]]
    assert entry["approval"]["approvals"] == 1


def test_a_standing_approval_approves_the_next_match_until_revoked(team: Team) -> None:
    client = team.client
    first = team.request()
    granted = team.decide(
        "alice",
        first["pending_id"],
        decision="approve",
        allow_for_minutes=60,
        constraints={"command": {"prefix": "rm -rf "}},
    )
    standing = granted["standing_approval"]
    assert standing["constraints"] == {"command": {"prefix": "rm -rf "}, "cwd": {"equals": "/repo"}}
    second = team.request(
        status=200,
        action={"name": "shell", "arguments": {"command": "rm -rf dist", "cwd": "/repo"}},
    )
    assert (second["status"], second["standing_approval_id"]) == ("approved", standing["id"])
    assert second["decided_by"]["kind"] == "standing_approval"
    listed = ok(client.get(f"{API}/standing-approvals", headers=team.people["bob"]))
    assert [s["id"] for s in listed["standing_approvals"]] == [standing["id"]]
    revoked = ok(
        client.post(f"{API}/standing-approvals/{standing['id']}/revoke", headers=team.admin)
    )
    assert revoked["revoked_at"] is not None
    assert team.request()["status"] == "pending"
    assert ok(client.get(f"{API}/standing-approvals", headers=team.admin)) == {
        "standing_approvals": [],
        "total": 0,
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": {"name": "", "arguments": {}}}, "action.name"),
        ({"action": {"name": "x", "arguments": []}}, "action.arguments"),
        (
            {"required_approvals": 3, "candidates": {"users": ["alice", "bob"]}},
            "required_approvals",
        ),
        ({"candidates": {"users": ["nobody"]}}, "candidates.users[0]"),
        ({"candidates": {"groups": ["nogroup"]}}, "candidates.groups[0]"),
    ],
)
def test_a_bad_request_names_its_field(team: Team, body: dict[str, Any], field: str) -> None:
    payload = {"session_id": team.session_id, "action": ACTION, **body}
    response = team.client.post(f"{API}/approvals/request", json=payload, headers=team.admin)
    assert field_of(response) == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"decision": "maybe"}, "decision"),
        ({"decision": "deny", "allow_for_minutes": 5}, "allow_for_minutes"),
        ({"decision": "approve", "allow_for_minutes": 0}, "allow_for_minutes"),
        (
            {"decision": "approve", "allow_for_minutes": 5, "constraints": {"nope": {"any": True}}},
            "standing.constraints[nope]",
        ),
    ],
)
def test_a_bad_decision_names_its_field_and_records_nothing(
    team: Team, body: dict[str, Any], field: str
) -> None:
    pending_id = team.request()["pending_id"]
    response = team.client.post(
        f"{API}/approvals/{pending_id}/decision", json=body, headers=team.people["alice"]
    )
    assert field_of(response) == field
    view = ok(team.client.get(f"{API}/approvals/{pending_id}", headers=team.admin))
    assert view["votes"] == []


def test_groups_are_for_administrators_only(team: Team) -> None:
    client = team.client
    assert client.get(f"{API}/groups", headers=team.people["alice"]).status_code == 404
    assert (
        client.post(f"{API}/groups", json={"name": "x"}, headers=team.people["alice"]).status_code
        == 404
    )
    ok(client.post(f"{API}/groups", json={"name": "Release"}, headers=team.admin), 201)
    duplicate = client.post(f"{API}/groups", json={"name": "release"}, headers=team.admin)
    assert field_of(duplicate) == "name"
    ok(client.put(f"{API}/groups/release/members/bob", headers=team.admin))
    removed = ok(client.delete(f"{API}/groups/release/members/bob", headers=team.admin))
    assert removed["members"] == []
    assert client.put(f"{API}/groups/none/members/bob", headers=team.admin).status_code == 404
    ok(client.delete(f"{API}/groups/Release", headers=team.admin))
    assert ok(client.get(f"{API}/groups", headers=team.admin)) == {"groups": [], "total": 0}


def test_wait_refuses_a_bad_timeout(team: Team) -> None:
    pending_id = team.request()["pending_id"]
    response = team.client.get(f"{API}/approvals/{pending_id}/wait?timeout=abc", headers=team.admin)
    assert field_of(response) == "timeout"
