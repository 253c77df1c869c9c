"""The approvals part of the golden wire scenario (issue #33): run after the REST and MCP
scenarios on the same served Clarion, so every exchange recorded before it keeps its bytes
(its steps, ids and times come after theirs). Recorded in ``tests/golden/wire/approvals.json``.

It covers every approval, standing-approval and group route — successes, 400s naming the field,
401, 404 for a non-candidate (the same bytes as a missing request) — the generic respond's 202
for a vote that does not decide, and the additive ``approval`` object of the pending list and
the history (plain items keep their shape)."""

from __future__ import annotations

import re
from typing import Any, Final

import httpx2

from tests.golden.scenario import Served, Transcript

API: Final = "/api/v1"
APPROVAL_PATHS: Final = (f"{API}/approvals", f"{API}/standing-approvals", f"{API}/groups")
ACTION: Final = {"name": "shell", "arguments": {"command": "rm -rf build", "cwd": "/repo"}}


def is_approval_path(template: str) -> bool:
    """Whether ``template`` is one of issue #33's routes (their 401s are recorded here)."""
    return template.startswith(APPROVAL_PATHS)


async def approvals_scenario(
    served: Served, http: httpx2.AsyncClient, openapi: object, wire: Any
) -> Transcript:
    """``wire`` is the golden test's ``Wire`` class (one clock step per exchange)."""
    transcript = Transcript("approvals")
    w = wire(served, http, transcript)
    auth = served.clarion.authentication
    served.clock.advance()
    tokens = {}
    for name, admin in (("root", True), ("erin", False), ("frank", False), ("gina", False)):
        user = auth.create_user(name, is_admin=admin)
        tokens[name] = {"Authorization": f"Bearer {auth.issue_token(user.id).token}"}
    root, erin, frank, gina = (tokens[n] for n in ("root", "erin", "frank", "gina"))
    assert isinstance(openapi, dict)
    for template, operations in openapi["paths"].items():
        for method, operation in operations.items():
            if is_approval_path(template) and "401" in operation["responses"]:
                path = re.sub(r"\{\w+\}", "x", template)
                body: object = {} if method in ("post", "patch", "put") else None
                await w.call(f"401: {method.upper()} {template}", method.upper(), path, json=body)
    session = await _setup(w, root)
    await _groups(w, root, erin)
    await _quorum(w, session, root, erin, frank, gina)
    await _standing(w, session, root, erin)
    return transcript


async def _setup(w: Any, root: dict[str, str]) -> str:
    workspace = await w.call(
        "setup: an unowned workspace",
        "POST",
        f"{API}/workspaces",
        json={"name": "Approvals", "owner_id": ""},
        headers=root,
    )
    task = await w.call(
        "setup: task",
        "POST",
        f"{API}/tasks",
        json={"title": "Deploy", "workspace_id": workspace.json()["id"]},
        headers=root,
    )
    session = await w.call(
        "setup: session",
        "POST",
        f"{API}/tasks/{task.json()['id']}/sessions",
        json={},
        headers=root,
    )
    session_id = session.json()["id"]
    assert isinstance(session_id, str)
    return session_id


async def _groups(w: Any, root: dict[str, str], erin: dict[str, str]) -> None:
    groups = f"{API}/groups"
    await w.call("groups: create", "POST", groups, json={"name": "oncall"}, headers=root)
    await w.call(
        "groups: a duplicate is 400", "POST", groups, json={"name": "OnCall"}, headers=root
    )
    await w.call("groups: not an admin is 404", "GET", groups, headers=erin)
    await w.call("groups: add a member", "PUT", f"{groups}/oncall/members/gina", headers=root)
    await w.call("groups: add another", "PUT", f"{groups}/oncall/members/erin", headers=root)
    await w.call("groups: remove a member", "DELETE", f"{groups}/oncall/members/erin", headers=root)
    await w.call("groups: list", "GET", groups, headers=root)
    await w.call("groups: create to delete", "POST", groups, json={"name": "temp"}, headers=root)
    await w.call("groups: delete", "DELETE", f"{groups}/temp", headers=root)
    await w.call("groups: delete unknown is 404", "DELETE", f"{groups}/temp", headers=root)


async def _quorum(w: Any, session: str, root: Any, erin: Any, frank: Any, gina: Any) -> None:
    request = {
        "session_id": session,
        "action": ACTION,
        "reason": "Free disk space",
        "required_approvals": 2,
        "candidates": {"users": ["erin"], "groups": ["oncall"]},
    }
    await w.call(
        "request: an empty action name is 400",
        "POST",
        f"{API}/approvals/request",
        json={**request, "action": {"name": "", "arguments": {}}},
        headers=root,
    )
    await w.call(
        "request: an unknown candidate is 400",
        "POST",
        f"{API}/approvals/request",
        json={**request, "candidates": {"users": ["nobody"]}},
        headers=root,
    )
    created = await w.call(
        "request: 2 of erin and oncall",
        "POST",
        f"{API}/approvals/request",
        json=request,
        headers=root,
    )
    await _votes(w, created.json()["pending_id"], root, erin, frank, gina)


async def _votes(w: Any, pending_id: str, root: Any, erin: Any, frank: Any, gina: Any) -> None:
    one = f"{API}/approvals/{pending_id}"
    await w.call("get: a non-candidate is 404", "GET", one, headers=frank)
    await w.call("get: a missing request is 404", "GET", f"{API}/approvals/nope", headers=frank)
    await w.call("get: a candidate", "GET", one, headers=erin)
    await w.call("list: pending, as a candidate", "GET", f"{API}/approvals", headers=gina)
    await w.call(
        "pending list: the approval object", "GET", f"{API}/clarification/pending", headers=gina
    )
    await w.call("wait: timed out, still pending", "GET", f"{one}/wait?timeout=0", headers=root)
    await w.call("wait: a bad timeout is 400", "GET", f"{one}/wait?timeout=x", headers=root)
    await w.call(
        "respond: a vote that does not decide is 202",
        "POST",
        f"{API}/clarification/{pending_id}/respond",
        json={"answers": [{"question_id": "decision", "selected_options": ["approve"]}]},
        headers=erin,
    )
    await w.call(
        "decision: an unknown decision is 400",
        "POST",
        f"{one}/decision",
        json={"decision": "maybe"},
        headers=gina,
    )
    await w.call(
        "decision: a repeat is not counted",
        "POST",
        f"{one}/decision",
        json={"decision": "approve"},
        headers=erin,
    )
    await w.call(
        "decision: the second approval decides",
        "POST",
        f"{one}/decision",
        json={"decision": "approve", "comment": "go ahead"},
        headers=gina,
    )
    await w.call("wait: decided", "GET", f"{one}/wait", headers=root)
    await w.call("list: decided", "GET", f"{API}/approvals?status=decided", headers=root)
    await w.call("list: a bad status is 400", "GET", f"{API}/approvals?status=x", headers=root)
    await w.call(
        "history: the approval object", "GET", f"{API}/clarification/resolved", headers=root
    )


async def _standing(w: Any, session: str, root: Any, erin: Any) -> None:
    request = {"session_id": session, "action": ACTION}
    created = await w.call(
        "request: anyone may decide", "POST", f"{API}/approvals/request", json=request, headers=root
    )
    one = f"{API}/approvals/{created.json()['pending_id']}"
    await w.call(
        "decision: a deny that grants is 400",
        "POST",
        f"{one}/decision",
        json={"decision": "deny", "allow_for_minutes": 5},
        headers=erin,
    )
    granted = await w.call(
        "decision: approve, and allow the same for 60 minutes",
        "POST",
        f"{one}/decision",
        json={
            "decision": "approve",
            "allow_for_minutes": 60,
            "constraints": {"command": {"prefix": "rm -rf "}},
        },
        headers=erin,
    )
    standing_id = granted.json()["standing_approval"]["id"]
    await w.call(
        "request: approved at once by the standing approval",
        "POST",
        f"{API}/approvals/request",
        json={
            **request,
            "action": {"name": "shell", "arguments": {"command": "rm -rf dist", "cwd": "/repo"}},
        },
        headers=root,
    )
    await _revoke(w, standing_id, root, erin)
    await w.call(
        "request: after the revocation, pending again",
        "POST",
        f"{API}/approvals/request",
        json=request,
        headers=root,
    )


async def _revoke(w: Any, standing_id: str, root: Any, erin: Any) -> None:
    await w.call("standing: list", "GET", f"{API}/standing-approvals", headers=erin)
    await w.call(
        "standing: revoke",
        "POST",
        f"{API}/standing-approvals/{standing_id}/revoke",
        json={},
        headers=root,
    )
    await w.call(
        "standing: revoke unknown is 404",
        "POST",
        f"{API}/standing-approvals/nope/revoke",
        json={},
        headers=root,
    )
    await w.call(
        "standing: list with inactive",
        "GET",
        f"{API}/standing-approvals?include=inactive",
        headers=root,
    )
