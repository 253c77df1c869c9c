"""An approval request in the inbox (issue #33): its own card — the action verbatim (escaped,
never markup), the reason, the short digest, "1 of 2 approvals", who may decide, Approve and
Deny with a comment and "and allow the same action for N minutes" — deciding through
``POST /api/v1/approvals/{id}/decision``, so quorum applies. Also the screenshot for
``docs/approvals.md`` (``CLARION_UPDATE_SCREENSHOTS=1`` writes it to ``docs/screenshots``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.actors import Rest
from tests.e2e.conftest import PageFactory
from tests.e2e.inbox import bundle_card
from tests.e2e.server import ServedClarion

TRACKED_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
COMMAND = "rm -rf build/ dist/ && echo '<b>done</b>'"
ACTION = {"name": "shell", "arguments": {"command": COMMAND, "cwd": "/srv/app"}}
SHOWN = (
    "Action: shell\nArguments:\n"
    '{\n  "command": "rm -rf build/ dist/ && echo \'<b>done</b>\'",\n  "cwd": "/srv/app"\n}'
)


@pytest.fixture(name="screenshots")
def fixture_screenshots(tmp_path: Path) -> Path:
    if os.environ.get("CLARION_UPDATE_SCREENSHOTS") == "1":
        return TRACKED_SCREENSHOTS
    return tmp_path


def _person(served: ServedClarion, name: str) -> Rest:
    user = served.authentication.create_user(name)
    return Rest(served.base_url, served.authentication.issue_token(user.id).token)


def _session(alice: Rest) -> str:
    """A session in a task without a workspace, which every signed-in person sees (D5), so
    bob may decide alice's agent's request."""
    task = alice.request("POST", "/api/v1/tasks", {"title": "Release v2.3"})
    session = alice.request("POST", f"/api/v1/tasks/{task['id']}/sessions", {"is_primary": True})
    return str(session["id"])


def _request(alice: Rest, session_id: str) -> dict[str, Any]:
    body = {
        "session_id": session_id,
        "action": ACTION,
        "reason": "The release build needs a clean tree; this removes the old artifacts.",
        "required_approvals": 2,
        "candidates": {"users": ["alice", "bob"]},
    }
    view: dict[str, Any] = alice.request("POST", "/api/v1/approvals/request", body)
    return view


def _signed_in(open_page: PageFactory, served: ServedClarion, person: Rest) -> Page:
    page = open_page(served)
    page.get_by_label("Personal access token").fill(person.token)
    page.get_by_role("button", name="Sign in").click()
    return page


def _card(page: Page, pending_id: str) -> Locator:
    card = bundle_card(page, pending_id)
    expect(card).to_be_visible()
    return card


def test_the_approval_card_shows_the_action_verbatim_and_a_quorum_vote_is_counted(
    open_page: PageFactory, clarion_with_auth: ServedClarion, screenshots: Path
) -> None:
    alice = _person(clarion_with_auth, "alice")
    bob = _person(clarion_with_auth, "bob")
    session_id = _session(alice)
    view = _request(alice, session_id)
    pending_id = view["pending_id"]
    decision = f"/api/v1/approvals/{pending_id}/decision"
    first = bob.request("POST", decision, {"decision": "approve", "comment": "fine by me"})
    assert first["counted"] is True
    assert first["approval"]["status"] == "pending"

    page = _signed_in(open_page, clarion_with_auth, alice)
    card = _card(page, pending_id)
    expect(card.get_by_role("heading", name="Approve shell?")).to_be_visible()
    action = card.locator("pre.approval-action")
    assert action.inner_text() == SHOWN
    assert card.locator("pre.approval-action b").count() == 0  # text, never markup
    expect(card.get_by_text("1 of 2 approvals")).to_be_visible()
    expect(card.get_by_text(view["action_digest"][:19] + "…")).to_be_visible()
    candidates = card.locator(".approval-candidates").inner_text()
    assert sorted(candidates.split(", ")) == ["alice", "bob"]
    expect(card.get_by_text("this removes the old artifacts")).to_be_visible()
    screenshots.mkdir(parents=True, exist_ok=True)
    card.get_by_label("Comment (optional, told to the agent)").fill("Go ahead.")
    card.get_by_label("and allow the same action for").check()
    card.get_by_label("Minutes").fill("15")
    card.screenshot(path=screenshots / "approval-card.png")

    card.get_by_role("button", name="Approve").click()
    expect(card.get_by_text("Approved. The agent was told.")).to_be_visible()
    decided = alice.request("GET", f"/api/v1/approvals/{pending_id}")
    assert decided["status"] == "approved"
    assert [vote["display_name"] for vote in decided["votes"]] == ["bob", "alice"]
    assert [vote["surface"] for vote in decided["votes"]] == ["rest", "inbox"]
    assert decided["comment"] == "Go ahead."

    # "and allow the same action for 15 minutes": the same action is approved at once.
    again = _request(alice, session_id)
    assert again["status"] == "approved"
    assert again["standing_approval_id"]
    assert again["decided_by"]["display_name"] == "standing approval by alice"
    # Listed to its granter: the task has no workspace, so everyone sees it (L1c).
    standing = alice.request("GET", "/api/v1/standing-approvals")
    assert again["standing_approval_id"] in [item["id"] for item in standing["standing_approvals"]]


def test_a_deny_decides_at_once_and_a_late_voter_is_told_the_outcome(
    open_page: PageFactory, clarion_with_auth: ServedClarion
) -> None:
    alice = _person(clarion_with_auth, "alice")
    bob = _person(clarion_with_auth, "bob")
    pending_id = _request(alice, _session(alice))["pending_id"]

    page = _signed_in(open_page, clarion_with_auth, alice)
    card = _card(page, pending_id)
    # A card with the person's draft stays when the request leaves the inbox meanwhile.
    card.get_by_label("Comment (optional, told to the agent)").fill("I was about to approve")
    bob.request(
        "POST",
        f"/api/v1/approvals/{pending_id}/decision",
        {"decision": "deny", "comment": "not during the freeze"},
    )
    card.get_by_role("button", name="Approve").click()
    expect(
        card.get_by_text("Already decided: denied by bob. Your vote was not counted.")
    ).to_be_visible()
    expect(card.get_by_text("not during the freeze")).to_be_visible()
