"""Screenshots of the inbox for the README, taken from a real server with a clean inbox — and
the phone-sized layout checked while we are there.

They go to a temporary directory, so a test run leaves the tracked images alone;
``CLARION_UPDATE_SCREENSHOTS=1`` (what ``make screenshots`` sets) writes them to
``docs/screenshots/`` instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.actors import Rest, question
from tests.e2e.conftest import PageFactory
from tests.e2e.inbox import bundle_card
from tests.e2e.server import ServedClarion

TRACKED_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
WIDE = {"width": 900, "height": 700}
PHONE = {"width": 390, "height": 844}


def _seed(served: ServedClarion) -> tuple[str, str]:
    rest = Rest(served.base_url)
    login = rest.agent_session("Redesign the login page")
    first = rest.create_bundle(
        login,
        [
            question(
                "Which layout should the login page use?",
                [
                    ("Centered card", "Matches the marketing site"),
                    ("Split screen", "Illustration left, form right"),
                ],
                title="Layout",
            ),
            question(
                "Which sign-in options should stay?",
                [
                    ("Remember me", "Keeps people signed in for 30 days"),
                    ("Magic link", "Sign in from an email"),
                    ("Company SSO", "Single sign-on for staff"),
                ],
                title="Options",
            ),
        ],
        context="The design system has two login templates and the old page offers three "
        "sign-in options. I'll build whichever you choose.",
    )
    staging = rest.agent_session("Set up the staging environment")
    second = rest.create_bundle(
        staging,
        [
            question(
                "Which database should staging use?",
                [("PostgreSQL 15", "Same as production"), ("SQLite", "Simpler, one file")],
            )
        ],
    )
    return first, second


@pytest.fixture(name="screenshots")
def fixture_screenshots(tmp_path: Path) -> Path:
    """Where this run's screenshots go."""
    if os.environ.get("CLARION_UPDATE_SCREENSHOTS") == "1":
        return TRACKED_SCREENSHOTS
    return tmp_path


def test_the_inbox_and_an_answer_in_progress_are_captured_for_the_readme(
    open_page: PageFactory, fresh_clarion: ServedClarion, screenshots: Path
) -> None:
    first, second = _seed(fresh_clarion)
    screenshots.mkdir(parents=True, exist_ok=True)

    page = open_page(fresh_clarion, viewport=WIDE)
    expect(bundle_card(page, second)).to_be_visible()
    # Issue #30: three questions in two requests (cards), counted as both.
    expect(page.get_by_text("3 questions waiting in 2 requests, oldest first.")).to_be_visible()
    # L6: the oldest bundle, and so its task, comes first.
    assert page.locator("article").evaluate_all("cards => cards.map(c => c.dataset.pendingId)") == [
        first,
        second,
    ]
    page.screenshot(path=screenshots / "inbox.png", full_page=True)

    card = bundle_card(page, first)
    card.get_by_label("Split screen").check()
    card.get_by_label("Remember me").check()
    card.get_by_label("Company SSO").check()
    card.get_by_label("Your own answer (optional)").nth(1).fill(
        "Drop the magic link; nobody uses it."
    )
    card.screenshot(path=screenshots / "answering.png")
    card.get_by_role("button", name="Submit answer").click()
    expect(card.get_by_text("Your answer was sent to the agent.")).to_be_visible()
    card.screenshot(path=screenshots / "answered.png")

    phone = open_page(fresh_clarion, viewport=PHONE)
    expect(bundle_card(phone, second)).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    phone.screenshot(path=screenshots / "inbox-phone.png", full_page=True)
