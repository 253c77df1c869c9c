"""``docs/examples/claude_code_approval_hook.py`` (docs/approvals.md, issue #33) is a working
Claude Code ``PreToolUse`` hook: it picks the risky commands, asks Clarion's agent endpoint
(``request_approval_kandev`` on ``/mcp/agent``) and turns the decision — given here through
the use case every surface calls — into Claude Code's ``allow`` / ``deny`` answer."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest

from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.approvals import Decision
from clarion.domain.model import Identity
from clarion.domain.resolved_by import Surface
from tests.docs.test_examples import BASE_URL, load_example

hook = load_example("claude_code_approval_hook")


def _bash(command: str) -> dict[str, Any]:
    return {"tool_name": "Bash", "tool_input": {"command": command}, "cwd": "/srv/app"}


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build/",
        "git push origin main --force",
        "kubectl delete pod web-1",
        "terraform destroy",
        "psql -c 'DROP TABLE users'",
    ],
)
def test_a_risky_command_becomes_the_action_asked_about(command: str) -> None:
    assert hook.risky_action(_bash(command)) == {
        "name": "shell",
        "arguments": {"command": command, "cwd": "/srv/app"},
    }


@pytest.mark.parametrize(
    "hook_input",
    [
        _bash("ls -la"),
        _bash("git push origin main"),
        {"tool_name": "Write", "tool_input": {"file_path": "/x", "content": "rm -rf /"}},
        {"tool_name": "Bash", "tool_input": {}},
    ],
)
def test_anything_else_runs_without_asking(hook_input: dict[str, Any]) -> None:
    assert hook.risky_action(hook_input) is None


def test_the_decision_becomes_claude_codes_answer() -> None:
    approved = {"status": "approved", "decided_by": {"display_name": "alice"}, "comment": "ok"}
    denied = {"status": "denied", "decided_by": {"display_name": "bob"}, "comment": ""}
    answers = [
        hook.decision_output(approved)["hookSpecificOutput"],
        hook.decision_output(denied)["hookSpecificOutput"],
        hook.decision_output(None, "connection refused")["hookSpecificOutput"],
    ]
    assert [(a["permissionDecision"], a["permissionDecisionReason"]) for a in answers] == [
        ("allow", "Approved in Clarion by alice: ok"),
        ("deny", "Denied in Clarion by bob"),
        ("ask", "Clarion gave no decision (connection refused)."),
    ]
    assert {a["hookEventName"] for a in answers} == {"PreToolUse"}


async def _decide_when_asked(clarion: Clarion, decision: Decision) -> None:
    """A person: waits for the request to be listed, then decides it (the use case every
    surface calls; the inbox's is ``POST /api/v1/approvals/{id}/decision``)."""
    person = Identity.synthetic_admin()
    while not (page := await clarion.services.listing.list_pending(person)).bundles:
        await anyio.sleep(0.02)
    [bundle] = page.bundles
    await clarion.services.approvals.decide(
        person, bundle.pending_id, decision, "from the test", surface=Surface.INBOX
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("decision", "answer"), [(Decision.APPROVE, "allow"), (Decision.DENY, "deny")]
)
async def test_the_hook_asks_clarion_and_answers_claude_code_with_the_decision(
    decision: Decision, answer: str
) -> None:
    clarion: Clarion = build_clarion(Settings(database_url="memory://", live_delivery="memory"))
    app = clarion.asgi_app
    action = hook.risky_action(_bash("rm -rf build/"))
    views: list[dict[str, Any]] = []

    async def ask() -> None:
        transport = httpx2.ASGITransport(app=app)
        views.append(
            await hook.request_approval(BASE_URL, action, "clean build", transport=transport)
        )

    async with app.router.lifespan_context(app):
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(ask)
                await _decide_when_asked(clarion, decision)
    [view] = views
    assert view["action"] == action
    assert view["reason"] == "clean build"
    output = hook.decision_output(view)["hookSpecificOutput"]
    assert output["permissionDecision"] == answer
    assert output["permissionDecisionReason"].endswith(": from the test")
