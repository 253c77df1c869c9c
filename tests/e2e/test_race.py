"""The page loses a race to another answering surface and tells the truth about it (W2, W3)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.actors import AgentSession, Rest, answer_over_mcp, question
from tests.e2e.inbox import bundle_card
from tests.e2e.server import ServedClarion

STALE = "This question left the inbox while you were working on it"
DEPLOY = question(
    "When should we deploy?",
    [("Tonight", "After the evening freeze"), ("Tomorrow", "In the morning window")],
    title="Deploy",
)
NOTIFY = question(
    "Who should be notified?",
    [("On-call", "The current on-call engineer"), ("Whole team", "The team channel")],
    title="Notify",
)


def test_a_page_that_loses_to_an_mcp_answer_shows_the_winners_answers_never_its_own(
    page: Page, clarion: ServedClarion, rest: Rest, agent_session: AgentSession
) -> None:
    """R3 across entry points; W2 (claimed: false closes the bundle) and W3 (the winner's
    answers, from the response body, are what the page shows)."""
    pending_id = rest.create_bundle(agent_session, [DEPLOY, NOTIFY], context="Release 4.2")
    card = bundle_card(page, pending_id)
    card.get_by_label("Tonight").check()
    card.get_by_label("On-call").check()
    card.get_by_label("Your own answer (optional)").first.fill("the page's own answer")

    won = answer_over_mcp(
        clarion.base_url,
        pending_id,
        [
            {"question_id": "q1", "selected_options": ["q1_opt2"], "custom_text": "after standup"},
            {"question_id": "q2", "selected_options": ["q2_opt2"]},
        ],
    )
    assert won["claimed"] is True
    # The live stream tells the page the bundle left the inbox; the draft stays, marked.
    expect(card.get_by_text(STALE)).to_be_visible()
    card.get_by_role("button", name="Submit answer").click()

    outcome = card.get_by_role("region", name="Outcome")
    expect(outcome).to_contain_text("Someone else answered first. Your answer was not used")
    expect(outcome).to_contain_text("Tomorrow — “after standup”")
    expect(outcome).to_contain_text("Whole team")
    expect(outcome).not_to_contain_text("the page's own answer")
    expect(outcome).not_to_contain_text("Tonight")
    expect(card.get_by_role("button", name="Submit answer")).to_have_count(0)


def test_a_page_answering_a_superseded_bundle_closes_it_as_no_longer_active(
    page: Page, rest: Rest, agent_session: AgentSession
) -> None:
    """W2: the 409 (not active, nobody won) closes the bundle and records nothing; #30: the
    card says why (the 409's Clarion-Closed-Reason)."""
    pending_id = rest.create_bundle(agent_session, [DEPLOY])
    card = bundle_card(page, pending_id)
    card.get_by_label("Tonight").check()

    rest.start_turn(agent_session)
    expect(card.get_by_text(STALE)).to_be_visible()
    card.get_by_role("button", name="Submit answer").click()

    expect(card.get_by_role("region", name="Outcome")).to_contain_text(
        "This question was closed without an answer: the agent moved on to a newer turn. "
        "Nothing was recorded."
    )
    expect(card.get_by_role("button", name="Submit answer")).to_have_count(0)


def test_an_untouched_bundle_answered_elsewhere_leaves_the_page_without_a_reload(
    page: Page, clarion: ServedClarion, rest: Rest, agent_session: AgentSession
) -> None:
    """Live: a bundle resolved by someone else disappears, and the change is announced."""
    pending_id = rest.create_bundle(agent_session, [DEPLOY])
    card = bundle_card(page, pending_id)
    expect(card).to_be_visible()

    answer_over_mcp(clarion.base_url, pending_id, [{"question_id": "q1", "custom_text": "done"}])

    expect(card).to_have_count(0)
    expect(page.get_by_role("status")).to_contain_text("settled elsewhere")
