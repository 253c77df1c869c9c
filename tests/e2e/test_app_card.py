"""Issue #31 item 4: the MCP App card in real Chromium, inside a host page that implements the
host side of the ext-apps bridge (:mod:`tests.e2e.app_host`), against a real Clarion.

A click in the card answers the agent whose ask is waiting on the server, and a card opened
after the question was answered elsewhere shows the winner's answer and who gave it, where.
The screenshot for ``docs/mcp-tools.md`` is taken on the way (``CLARION_UPDATE_SCREENSHOTS=1``
writes it to ``docs/screenshots/``; otherwise it goes to a temporary directory).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from playwright.sync_api import FrameLocator, Page, expect

from clarion.adapters.mcp.app_card import PENDING_META_KEY, RESOURCE_URI, STATUS_TOOL
from tests.e2e.actors import CALL_TIMEOUT_S, Rest, in_thread, question
from tests.e2e.app_host import apps_client, ask_as_host, open_host, read_card, result_json
from tests.e2e.conftest import PageFactory
from tests.e2e.server import ServedClarion

TRACKED_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
HOST_VIEW = {"width": 720, "height": 900}

ARGUMENTS: dict[str, Any] = {
    "questions": [
        question(
            "Which database should the staging environment use?",
            [
                ("PostgreSQL 15", "Same engine and version as production"),
                ("SQLite", "One file, nothing to run; fine for a demo"),
            ],
            title="Database",
            qid="database",
        ),
        question(
            "What should happen to last week's test data?",
            [
                ("Keep it", "Migrate it into the new database"),
                ("Start clean", "Drop it; seed fresh fixtures"),
            ],
            title="Test data",
            qid="data",
        ),
    ],
    "context": "I'm setting up staging for the new billing service. "
    "Two choices change how I write the deploy script.",
}


@pytest.fixture(name="screenshots")
def fixture_screenshots(tmp_path: Path) -> Path:
    if os.environ.get("CLARION_UPDATE_SCREENSHOTS") == "1":
        return TRACKED_SCREENSHOTS
    return tmp_path


def _alice(served: ServedClarion) -> str:
    user = served.authentication.create_user("alice")
    return served.authentication.issue_token(user.id, name="laptop").token


def _waiting_bundle(url: str, token: str) -> str:
    """The pending id of the ask's bundle, once the server has recorded the ask."""

    async def find() -> str:
        async with apps_client(url, token) as client:
            with anyio.fail_after(CALL_TIMEOUT_S):
                while True:
                    result = await client.call_tool(STATUS_TOOL, {"ask": ARGUMENTS})
                    if not result.is_error:
                        assert isinstance(result.structured_content, dict)
                        return str(result.structured_content["pending_id"])
                    await anyio.sleep(0.05)

    return in_thread(find).result(CALL_TIMEOUT_S)


def _card(page: Page) -> FrameLocator:
    return page.frame_locator("iframe#card")


def test_a_click_in_the_card_answers_the_agent_waiting_on_the_server(
    open_page: PageFactory, clarion_with_auth: ServedClarion, screenshots: Path
) -> None:
    served = clarion_with_auth
    token = _alice(served)
    url = served.url("/mcp/agent")
    html, meta = read_card(url, token)
    assert meta == {"ui": {"resourceUri": RESOURCE_URI}}
    # The card opens as the call starts, before the server may have recorded the ask: it
    # keeps looking for it.
    asked = ask_as_host(url, token, ARGUMENTS)
    page = open_page(served, viewport=HOST_VIEW, navigate=False)
    open_host(page, served, url=url, token=token, html=html, tool_input=ARGUMENTS)
    card = _card(page)
    expect(card.get_by_text("Which database should the staging environment use?")).to_be_visible()
    expect(card.get_by_text("Two choices change how I write the deploy script.")).to_be_visible()
    card.get_by_label("PostgreSQL 15").check()
    card.get_by_label("Start clean").check()
    own = card.get_by_label("Your own answer (optional)").nth(1)
    own.fill("Keep the two admin accounts.")
    own.blur()
    assert not asked.done()  # nothing was sent yet: the agent still waits
    screenshots.mkdir(parents=True, exist_ok=True)
    page.locator("iframe#card").screenshot(path=screenshots / "mcp-app-card.png")

    card.get_by_role("button", name="Submit answer").click()
    expect(card.get_by_text("Your answer was sent to the agent.")).to_be_visible()
    result = asked.result(CALL_TIMEOUT_S)
    assert not result.is_error, result.content
    answers = result.structured_content
    assert answers["database"]["selected_options"] == ["q1_opt1"]
    assert answers["data"]["selected_options"] == ["q2_opt2"]
    assert answers["data"]["custom_text"] == "Keep the two admin accounts."
    assert PENDING_META_KEY in (result.meta or {})
    # The bridge, in order: the handshake first, the card's calls only through the host.
    log = page.evaluate("window.bridgeLog.map(m => m.method || 'response')")
    assert log[:2] == ["ui/initialize", "ui/notifications/initialized"]
    assert "tools/call" in log
    assert "ui/notifications/size-changed" in log


def test_a_card_opened_after_the_question_was_answered_elsewhere_shows_the_winner(
    open_page: PageFactory, clarion_with_auth: ServedClarion, screenshots: Path
) -> None:
    served = clarion_with_auth
    token = _alice(served)
    url = served.url("/mcp/agent")
    html, _ = read_card(url, token)
    asked = ask_as_host(url, token, ARGUMENTS)
    pending_id = _waiting_bundle(url, token)
    Rest(served.base_url, token).request(
        "POST",
        f"/api/v1/clarification/{pending_id}/respond",
        {
            "answers": [
                {"question_id": "database", "selected_options": ["q1_opt2"], "custom_text": ""},
                {"question_id": "data", "selected_options": ["q2_opt1"], "custom_text": ""},
            ]
        },
    )
    result = asked.result(CALL_TIMEOUT_S)
    assert (result.meta or {})[PENDING_META_KEY] == pending_id

    page = open_page(served, viewport=HOST_VIEW, navigate=False)
    open_host(
        page,
        served,
        url=url,
        token=token,
        html=html,
        tool_input=ARGUMENTS,
        tool_result=result_json(result),
    )
    card = _card(page)
    expect(card.get_by_text("Answered by alice, in the REST API.")).to_be_visible()
    expect(card.get_by_text("SQLite")).to_be_visible()
    expect(card.get_by_text("Keep it")).to_be_visible()
    expect(card.get_by_role("button", name="Submit answer")).to_have_count(0)
    page.locator("iframe#card").screenshot(path=screenshots / "mcp-app-card-answered.png")
