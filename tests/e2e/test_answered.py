"""Issue #20: the inbox's Answered view — a question answered elsewhere (here over the
external MCP endpoint) appears with who answered, where and when, without a reload."""

from __future__ import annotations

import os
import re
from pathlib import Path

from playwright.sync_api import expect

from tests.e2e.actors import Rest, answer_over_mcp, question
from tests.e2e.conftest import PageFactory
from tests.e2e.inbox import bundle_card
from tests.e2e.server import ServedClarion

TRACKED_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
WIDE = {"width": 900, "height": 800}


def test_a_question_answered_over_mcp_appears_in_answered_with_who_where_and_when(
    open_page: PageFactory, fresh_clarion: ServedClarion, tmp_path: Path
) -> None:
    rest = Rest(fresh_clarion.base_url)
    session = rest.agent_session("Set up the staging environment")
    pending_id = rest.create_bundle(
        session,
        [
            question(
                "Which database should staging use?",
                [("PostgreSQL 15", "Same as production"), ("SQLite", "Simpler, one file")],
            )
        ],
    )
    page = open_page(fresh_clarion, viewport=WIDE)
    expect(page.locator("#connection")).to_have_text("Live")
    expect(bundle_card(page, pending_id)).to_be_visible()
    expect(page.get_by_role("heading", name="Answered")).to_be_visible()
    expect(page.locator("#answered-empty")).to_be_visible()
    page.evaluate("window.notReloaded = true")

    answers = [{"question_id": "q1", "selected_options": ["q1_opt1"], "custom_text": "Match prod."}]
    assert answer_over_mcp(fresh_clarion.base_url, pending_id, answers)["claimed"] is True

    item = page.locator(f'.answered-item[data-pending-id="{pending_id}"]')
    expect(item).to_be_visible()
    expect(item.locator(".answered-by")).to_have_text("anonymous (auth disabled)")
    expect(item.locator(".answered-surface")).to_have_text("MCP")
    expect(item.locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-.+Z$"))
    expect(item).to_contain_text("Which database should staging use?")
    expect(item).to_contain_text("PostgreSQL 15")
    expect(item).to_contain_text("“Match prod.”")
    expect(bundle_card(page, pending_id)).to_be_hidden()
    expect(page.locator("#answered-empty")).to_be_hidden()
    assert page.evaluate("window.notReloaded") is True

    folder = (
        TRACKED_SCREENSHOTS if os.environ.get("CLARION_UPDATE_SCREENSHOTS") == "1" else tmp_path
    )
    folder.mkdir(parents=True, exist_ok=True)
    page.locator("#answered").screenshot(path=folder / "answered-history.png")


def test_a_question_closed_without_an_answer_appears_in_answered_with_why(
    open_page: PageFactory, fresh_clarion: ServedClarion, tmp_path: Path
) -> None:
    """#30: answering one question while no agent waits resumes the agent on a new turn,
    which closes the session's other question; the Answered view shows it and why."""
    rest = Rest(fresh_clarion.base_url)
    session = rest.agent_session("Tidy the release notes")
    answered = rest.create_bundle(
        session, [question("Keep the changelog?", [("Yes", "keep it"), ("No", "drop it")])]
    )
    other = rest.create_bundle(
        session,
        [question("Which tone?", [("Formal", "for customers"), ("Casual", "for the team")])],
    )
    page = open_page(fresh_clarion, viewport=WIDE)
    expect(page.locator("#connection")).to_have_text("Live")
    expect(bundle_card(page, other)).to_be_visible()

    answers = [{"question_id": "q1", "selected_options": ["q1_opt1"], "custom_text": ""}]
    assert answer_over_mcp(fresh_clarion.base_url, answered, answers)["claimed"] is True

    item = page.locator(f'.answered-item[data-pending-id="{other}"]')
    expect(item).to_be_visible()
    expect(item.locator("strong")).to_have_text("Closed without an answer")
    expect(item.locator(".answered-reason")).to_have_text("the agent moved on to a newer turn")
    expect(item).to_contain_text("Which tone?")
    expect(item.locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-.+Z$"))
    expect(bundle_card(page, other)).to_be_hidden()
    expect(page.locator(f'.answered-item[data-pending-id="{answered}"]')).to_contain_text(
        "Answered"
    )

    folder = (
        TRACKED_SCREENSHOTS if os.environ.get("CLARION_UPDATE_SCREENSHOTS") == "1" else tmp_path
    )
    folder.mkdir(parents=True, exist_ok=True)
    page.locator("#answered").screenshot(path=folder / "answered-closed.png")
