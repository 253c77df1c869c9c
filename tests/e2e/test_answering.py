"""A person answers in the inbox and the asking agent receives exactly that answer."""

from __future__ import annotations

from playwright.sync_api import Page, Route, expect

from tests.e2e.actors import AgentSession, Rest, ask, question
from tests.e2e.inbox import bundle_card, question_group, session_cards
from tests.e2e.server import ServedClarion

LAYOUT = question(
    "Which layout should the login page use?",
    [("Centered card", "Matches the marketing site"), ("Split screen", "Form on the right")],
    qid="layout",
    title="Layout",
)
EXTRAS = question(
    "Which sign-in extras should stay?",
    [
        ("Remember me", "Keeps people signed in"),
        ("Magic link", "Email sign-in"),
        ("SSO", "Company login"),
    ],
    qid="extras",
    title="Extras",
)


def test_an_answer_given_in_the_page_reaches_the_waiting_agent_with_every_selected_option(
    page: Page, clarion: ServedClarion, agent_session: AgentSession
) -> None:
    """W1/R1: the page's answer (several options, free text) is what the blocked agent gets."""
    waiting = ask(
        clarion.base_url,
        agent_session,
        {"questions": [LAYOUT, EXTRAS], "context": "Migrating the login form."},
    )
    card = session_cards(page, agent_session.session_id)
    expect(card).to_have_count(1)
    expect(card.get_by_text("Migrating the login form.")).to_be_visible()

    layout = question_group(card, "Which layout should the login page use?")
    layout.get_by_label("Split screen").check()
    extras = question_group(card, "Which sign-in extras should stay?")
    extras.get_by_label("Remember me").check()
    extras.get_by_label("SSO").check()
    extras.get_by_label("Your own answer (optional)").fill("  Keep SSO for staff only.  ")
    card.get_by_role("button", name="Submit answer").click()

    expect(card.get_by_text("Your answer was sent to the agent.")).to_be_visible()
    expect(card.get_by_text("Remember me, SSO — “Keep SSO for staff only.”")).to_be_visible()
    received = waiting.result(timeout=10)
    assert received["rejected"] is False
    assert received["layout"]["selected_options"] == ["q1_opt2"]
    assert received["extras"]["selected_options"] == ["q2_opt1", "q2_opt3"]
    assert received["extras"]["custom_text"] == "Keep SSO for staff only."


def test_a_skip_with_a_reason_reaches_the_waiting_agent_as_a_rejection(
    page: Page, clarion: ServedClarion, agent_session: AgentSession
) -> None:
    """R9: Skip is a rejection carrying the person's reason."""
    waiting = ask(clarion.base_url, agent_session, {"questions": [LAYOUT]})
    card = session_cards(page, agent_session.session_id)

    card.get_by_text("Skip this question instead…").click()
    card.get_by_label("Reason for skipping (optional)").fill("Ask the design team.")
    card.get_by_role("button", name="Skip", exact=True).click()

    expect(card.get_by_text("You skipped this question.")).to_be_visible()
    received = waiting.result(timeout=10)
    assert received["rejected"] is True
    assert received["reject_reason"] == "Ask the design team."


def test_a_bundle_can_be_answered_with_the_keyboard_alone(
    page: Page, rest: Rest, agent_session: AgentSession
) -> None:
    """Every control is reachable with Tab and operable with Space and Enter."""
    pending_id = rest.create_bundle(agent_session, [LAYOUT])
    card = session_cards(page, agent_session.session_id)
    expect(card).to_have_count(1)

    first_option = card.get_by_label("Centered card")
    for _ in range(60):
        page.keyboard.press("Tab")
        if first_option.evaluate("element => element === document.activeElement"):
            break
    expect(first_option).to_be_focused()
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(card.get_by_label("Your own answer (optional)")).to_be_focused()
    page.keyboard.type("Typed without a mouse.")
    page.keyboard.press("Tab")
    expect(card.get_by_role("button", name="Submit answer")).to_be_focused()
    page.keyboard.press("Enter")

    outcome = card.get_by_role("region", name="Outcome")
    expect(outcome).to_be_focused()
    expect(outcome).to_contain_text("Centered card — “Typed without a mouse.”")
    assert pending_id not in rest.pending_ids()


def test_a_failed_submission_keeps_the_answer_and_says_why(
    page: Page, rest: Rest, agent_session: AgentSession
) -> None:
    """A 5xx (R4a, R7a) leaves the bundle open with the person's input intact, to retry."""
    pending_id = rest.create_bundle(agent_session, [LAYOUT])
    card = bundle_card(page, pending_id)
    card.get_by_label("Centered card").check()

    def fail(route: Route) -> None:
        route.fulfill(
            status=500,
            content_type="application/json",
            body='{"error": "failed to update clarification state"}',
        )

    page.route("**/respond", fail)
    card.get_by_role("button", name="Submit answer").click()
    expect(
        card.get_by_text(
            "Your answer was not recorded: failed to update clarification state. Try again."
        )
    ).to_be_visible()
    expect(card.get_by_label("Centered card")).to_be_checked()

    page.unroute("**/respond", fail)
    card.get_by_role("button", name="Submit answer").click()
    expect(card.get_by_text("Your answer was sent to the agent.")).to_be_visible()
