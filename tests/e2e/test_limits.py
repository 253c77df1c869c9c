"""The free-text limit is the server's, counted the server's way (W4, W4a, N8b), and a
server-side validation error is shown next to the field it names (R10)."""

from __future__ import annotations

import json

from playwright.sync_api import Page, Request, Route, expect

from tests.e2e.actors import AgentSession, Rest, question
from tests.e2e.inbox import bundle_card

ASTRAL = "𝄞"  # U+1D11E: one code point, two UTF-16 units
PICK = question("Pick one", [("A", "First"), ("B", "Second")])
NOTE = question("Anything else?", [("No", "Nothing more"), ("Yes", "See note")])


def test_2000_astral_characters_are_accepted_and_2001_are_blocked_with_a_visible_message(
    page: Page, rest: Rest, agent_session: AgentSession
) -> None:
    """W4a: 2000 code points pass (4000 UTF-16 units, so no maxLength below 4000 could allow
    them), 2001 show a message and block Submit, and nothing is ever truncated."""
    pending_id = rest.create_bundle(agent_session, [PICK])
    card = bundle_card(page, pending_id)
    field = card.get_by_label("Your own answer (optional)")
    submit = card.get_by_role("button", name="Submit answer")
    sent: list[Request] = []
    page.on("request", lambda request: sent.append(request) if request.method == "POST" else None)

    maximum = field.get_attribute("maxlength")
    assert maximum is None or int(maximum) >= 4000

    field.fill(ASTRAL * 2001)
    expect(card.get_by_text("2001 / 2000")).to_be_visible()
    expect(card.get_by_text("Too long: 2001 characters, the limit is 2000.")).to_be_visible()
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(submit).to_be_disabled()
    assert field.input_value() == ASTRAL * 2001
    # aria-disabled keeps the button reachable; pressing it sends nothing and returns the
    # person to the field that is too long.
    submit.click(force=True)
    expect(field).to_be_focused()
    assert sent == []
    assert pending_id in rest.pending_ids()

    page.keyboard.press("Control+End")
    page.keyboard.press("Backspace")
    expect(card.get_by_text("2000 / 2000")).to_be_visible()
    expect(card.get_by_text("Too long")).to_have_count(0)
    expect(submit).to_be_enabled()
    submit.click()

    expect(card.get_by_text("Your answer was sent to the agent.")).to_be_visible()
    assert len(sent) == 1
    body = json.loads(sent[0].post_data or "{}")
    assert body["answers"][0]["custom_text"] == ASTRAL * 2000
    assert pending_id not in rest.pending_ids()


def test_the_skip_reason_has_the_same_limit(
    page: Page, rest: Rest, agent_session: AgentSession
) -> None:
    """N8b caps the reason too; the page blocks Skip at 2001 code points."""
    pending_id = rest.create_bundle(agent_session, [PICK])
    card = bundle_card(page, pending_id)
    card.get_by_text("Skip this question instead…").click()
    reason = card.get_by_label("Reason for skipping (optional)")

    reason.fill(ASTRAL * 2001)
    expect(card.get_by_text("Too long: 2001 characters, the limit is 2000.")).to_be_visible()
    expect(card.get_by_role("button", name="Skip", exact=True)).to_be_disabled()
    reason.fill(ASTRAL * 2000)
    expect(card.get_by_role("button", name="Skip", exact=True)).to_be_enabled()


def test_a_validation_error_from_the_server_is_shown_next_to_the_field_it_names(
    page: Page, rest: Rest, agent_session: AgentSession
) -> None:
    """R10: the 400's message appears by the offending answer, and the bundle stays open.

    The page never sends an over-long answer itself, so the request is altered on its way
    to the server (as a client with a different idea of the limit would send it)."""
    pending_id = rest.create_bundle(agent_session, [PICK, NOTE])
    card = bundle_card(page, pending_id)

    def lengthen_second_answer(route: Route) -> None:
        body = json.loads(route.request.post_data or "{}")
        body["answers"][1]["custom_text"] = "x" * 2001
        route.continue_(post_data=json.dumps(body))

    page.route("**/respond", lengthen_second_answer)
    card.get_by_label("A", exact=True).check()
    card.get_by_role("button", name="Submit answer").click()

    second = card.get_by_role("group", name="Anything else?")
    expect(second.get_by_text("answer 2 custom_text exceeds 2000 characters")).to_be_visible()
    expect(second.get_by_label("Your own answer (optional)")).to_be_focused()
    expect(card.get_by_role("group", name="Pick one").get_by_text("exceeds")).to_have_count(0)
    expect(card.get_by_role("button", name="Submit answer")).to_be_visible()
    assert pending_id in rest.pending_ids()


def test_the_inbox_places_a_400_by_its_field_never_by_its_text(
    page: Page, rest: Rest, agent_session: AgentSession
) -> None:
    """#32: the card reads the 400's ``field`` (a JSON path), not its prose: a message that
    names no answer at all still lands by the question ``field`` points at, a
    ``reject_reason`` one by the skip reason, anything else above Submit."""
    pending_id = rest.create_bundle(agent_session, [PICK, NOTE])
    card = bundle_card(page, pending_id)
    replies = [
        {"error": "refused: see the field", "field": "answers[1].custom_text"},
        {"error": "not that reason", "field": "reject_reason"},
        {"error": "answer 1 is wrong"},  # prose naming an answer, but no field
    ]

    def refuse(route: Route) -> None:
        route.fulfill(status=400, content_type="application/json", body=json.dumps(replies.pop(0)))

    page.route("**/respond", refuse)
    card.get_by_label("A", exact=True).check()
    submit = card.get_by_role("button", name="Submit answer")
    submit.click()
    second = card.get_by_role("group", name="Anything else?")
    expect(second.get_by_text("refused: see the field")).to_be_visible()
    expect(second.get_by_label("Your own answer (optional)")).to_be_focused()

    card.get_by_text("Skip these questions instead…").click()
    card.get_by_role("button", name="Skip", exact=True).click()
    expect(card.get_by_text("not that reason")).to_be_visible()
    expect(card.get_by_label("Reason for skipping (optional)")).to_be_focused()

    submit.click()
    first = card.get_by_role("group", name="Pick one")
    expect(card.locator(".form-error").get_by_text("answer 1 is wrong")).to_be_visible()
    expect(first.get_by_text("answer 1 is wrong")).to_have_count(0)
    assert pending_id in rest.pending_ids()
