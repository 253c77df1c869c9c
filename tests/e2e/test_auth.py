"""With authentication enabled a person signs in once with a personal access token, and the
page works on an HttpOnly cookie session from then on (W1: credentials and CSRF header)."""

from __future__ import annotations

from playwright.sync_api import Request, expect

from tests.e2e.actors import Rest, question
from tests.e2e.conftest import PageFactory
from tests.e2e.inbox import bundle_card
from tests.e2e.server import ServedClarion

SHIP = question("Ship it?", [("Ship", "Release now"), ("Hold", "Wait a day")])
FORGED = "clarion_pat_00000000_" + "A" * 43


def _person(served: ServedClarion, name: str) -> Rest:
    user = served.authentication.create_user(name)
    return Rest(served.base_url, served.authentication.issue_token(user.id).token)


def test_a_person_signs_in_with_a_token_answers_over_the_cookie_session_and_signs_out(
    open_page: PageFactory, clarion_with_auth: ServedClarion
) -> None:
    alice, bob = _person(clarion_with_auth, "alice"), _person(clarion_with_auth, "bob")
    mine = alice.create_bundle(alice.agent_session("Alice's task"), [SHIP])
    theirs = bob.create_bundle(bob.agent_session("Bob's task"), [SHIP])
    page = open_page(clarion_with_auth)
    token_field = page.get_by_label("Personal access token")

    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("heading", name="Questions waiting for an answer")).to_be_hidden()
    token_field.fill(FORGED)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("That token was not accepted.")).to_be_visible()

    token_field.fill(alice.token)
    page.keyboard.press("Enter")

    card = bundle_card(page, mine)
    expect(card).to_be_visible()
    expect(bundle_card(page, theirs)).to_have_count(0)
    cookies = {cookie["name"]: cookie for cookie in page.context.cookies()}
    assert cookies["clarion_session"]["httpOnly"] is True
    assert cookies["clarion_session"]["sameSite"] == "Strict"
    assert alice.token not in cookies["clarion_session"]["value"]
    assert token_field.input_value() == ""
    stored = page.evaluate("JSON.stringify([{...localStorage}, {...sessionStorage}])")
    assert alice.token not in stored

    sent: list[Request] = []
    page.on("request", lambda request: sent.append(request) if request.method == "POST" else None)
    card.get_by_label("Ship", exact=True).check()
    card.get_by_role("button", name="Submit answer").click()
    expect(card.get_by_text("Your answer was sent to the agent.")).to_be_visible()
    headers = sent[0].headers
    assert "authorization" not in headers
    assert headers["x-csrf-token"] == cookies["clarion_csrf"]["value"]
    assert mine not in alice.pending_ids()

    page.reload()
    expect(page.locator("#account-name")).to_have_text("Signed in as alice")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("status")).to_have_text("Signed out.")
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert "clarion_session" not in {cookie["name"] for cookie in page.context.cookies()}
