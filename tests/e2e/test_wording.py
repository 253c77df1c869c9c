"""Issue #30: what the inbox says — counts that say what they count, answered items that name
their task and session, a header that says who is signed in (or that nobody needs to be), a
status message that never covers a form control, and a sign-out that is not an error."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import FloatRect, Locator, Page, expect

from tests.e2e.actors import Rest, answer_over_mcp, question
from tests.e2e.conftest import DESKTOP, PageFactory
from tests.e2e.inbox import bundle_card, status_region
from tests.e2e.server import ServedClarion

TITLE = "Clarion — questions waiting for you"
PHONE = {"width": 390, "height": 844}
DANGER = "rgb(180, 35, 24)"  # --danger in the light scheme
LAYOUT = question(
    "Which layout should the login page use?",
    [("Centered card", "Matches the marketing site"), ("Split screen", "Form on the right")],
    title="Layout",
)
EXTRAS = question(
    "Which sign-in extras should stay?",
    [("Remember me", "Keeps people signed in"), ("SSO", "Company login")],
    title="Extras",
)
DATABASE = question(
    "Which database should staging use?",
    [("PostgreSQL 15", "Same as production"), ("SQLite", "Simpler, one file")],
)


def _box(locator: Locator) -> FloatRect:
    box = locator.bounding_box()
    assert box is not None, f"{locator} has no box"
    return box


_SEEN = """() => {
    const seen = [];
    const controls = document.querySelectorAll(
        "main input, main textarea, main button, main summary");
    for (const el of controls) {
        const r = el.getBoundingClientRect();
        if (!r.width || !r.height) continue;
        const points = [[r.left + r.width / 2, r.top + r.height / 2],
            [r.left + 2, r.top + 2], [r.right - 2, r.top + 2],
            [r.left + 2, r.bottom - 2], [r.right - 2, r.bottom - 2]];
        const visible = points.map(([x, y]) => {
            const top = document.elementFromPoint(x, y);
            return top !== null && (top === el || el.contains(top) || top.contains(el));
        });
        const box = [r.left, r.top, r.width, r.height];
        seen.push({control: el.outerHTML.slice(0, 80), box, visible});
    }
    return seen;
}"""


def _controls(page: Page) -> list[dict[str, Any]]:
    """Every form control in the page's main area: where it is, and which of its centre and
    four inner corners are on top (not covered by anything) — points outside the window are
    never on top."""
    return list(page.evaluate(_SEEN))


def test_the_summary_and_the_tab_title_count_questions_and_say_how_many_requests_hold_them(
    open_page: PageFactory, fresh_clarion: ServedClarion
) -> None:
    """One card with two questions is two questions in one request, not "1 question"."""
    rest = Rest(fresh_clarion.base_url)
    login = rest.agent_session("Redesign the login page")
    first = rest.create_bundle(login, [LAYOUT, EXTRAS])
    page = open_page(fresh_clarion)
    summary = page.locator("#summary")

    expect(bundle_card(page, first)).to_be_visible()
    expect(summary).to_have_text("2 questions waiting in 1 request, oldest first.")
    expect(page).to_have_title(f"(2) {TITLE}")

    staging = rest.agent_session("Set up the staging environment")
    second = rest.create_bundle(staging, [DATABASE])
    expect(bundle_card(page, second)).to_be_visible()
    expect(summary).to_have_text("3 questions waiting in 2 requests, oldest first.")
    expect(page).to_have_title(f"(3) {TITLE}")
    expect(status_region(page)).to_have_text("1 new question arrived.")

    third = rest.create_bundle(staging, [LAYOUT, DATABASE])
    expect(bundle_card(page, third)).to_be_visible()
    expect(status_region(page)).to_have_text("2 new questions arrived.")
    expect(summary).to_have_text("5 questions waiting in 3 requests, oldest first.")

    rest.finish(login)
    expect(bundle_card(page, first)).to_have_count(0)
    expect(status_region(page)).to_have_text("2 questions were settled elsewhere.")
    # One question per request: the request count would only repeat it.
    rest.finish(staging)
    expect(page.locator("article")).to_have_count(0)
    expect(summary).to_have_text("")
    expect(page.locator("#empty")).to_be_visible()
    expect(page).to_have_title(TITLE)


def test_one_question_in_one_request_is_counted_once(
    open_page: PageFactory, fresh_clarion: ServedClarion
) -> None:
    rest = Rest(fresh_clarion.base_url)
    pending_id = rest.create_bundle(rest.agent_session("Set up staging"), [DATABASE])
    page = open_page(fresh_clarion)
    expect(bundle_card(page, pending_id)).to_be_visible()
    expect(page.locator("#summary")).to_have_text("1 question waiting, oldest first.")
    expect(page).to_have_title(f"(1) {TITLE}")


def test_an_answered_item_names_its_task_and_session(
    open_page: PageFactory, fresh_clarion: ServedClarion
) -> None:
    rest = Rest(fresh_clarion.base_url)
    session = rest.agent_session("Set up the staging environment")
    pending_id = rest.create_bundle(session, [DATABASE])
    page = open_page(fresh_clarion)
    expect(bundle_card(page, pending_id)).to_be_visible()

    answers = [{"question_id": "q1", "selected_options": ["q1_opt1"], "custom_text": ""}]
    assert answer_over_mcp(fresh_clarion.base_url, pending_id, answers)["claimed"] is True

    item = page.locator(f'.answered-item[data-pending-id="{pending_id}"]')
    origin = item.locator(".answered-origin")
    expect(origin).to_have_text(
        f"Task: Set up the staging environment · Session {session.session_id[:8]}"
    )
    expect(origin.locator(f'[title="{session.session_id}"]')).to_have_count(1)


def test_with_authentication_off_the_header_says_so(page: Page) -> None:
    account = page.locator("#account")
    expect(account).to_be_visible()
    expect(account.locator("#account-name")).to_have_text(
        "Authentication off — everyone sees everything"
    )
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)


def test_the_header_names_who_is_signed_in_and_a_sign_out_is_not_shown_as_an_error(
    open_page: PageFactory, clarion_with_auth: ServedClarion
) -> None:
    auth = clarion_with_auth.authentication
    alice = auth.create_user("alice")
    token = auth.issue_token(alice.id).token
    page = open_page(clarion_with_auth)

    page.get_by_label("Personal access token").fill("clarion_pat_00000000_" + "A" * 43)
    page.get_by_role("button", name="Sign in").click()
    refused = page.get_by_text("That token was not accepted.")
    expect(refused).to_be_visible()
    expect(refused).to_have_css("color", DANGER)

    page.get_by_label("Personal access token").fill(token)
    page.keyboard.press("Enter")
    account = page.locator("#account")
    expect(account).to_contain_text("Signed in as alice")
    expect(account.locator(f'[title="User id {alice.id}"]')).to_have_text("alice")

    account.get_by_role("button", name="Sign out").click()
    notice = page.get_by_text("You are signed out.")
    expect(notice).to_be_visible()
    expect(notice).not_to_have_css("color", DANGER)
    expect(page.locator("#signin-error")).to_have_text("")
    expect(account).to_be_hidden()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_status_message_never_covers_or_moves_the_free_text_field_being_typed_in(
    open_page: PageFactory, fresh_clarion: ServedClarion, viewport: dict[str, int]
) -> None:
    """With the field at the bottom of the window (where the old toast sat) and at the top,
    a message arriving neither moves the field nor covers it, nor any other control."""
    rest = Rest(fresh_clarion.base_url)
    # Enough content above and below the card to scroll it anywhere in the window.
    for _ in range(3):
        rest.create_bundle(rest.agent_session("Set up staging"), [DATABASE])
    pending_id = rest.create_bundle(rest.agent_session("Redesign login"), [LAYOUT, EXTRAS])
    for _ in range(2):
        rest.create_bundle(rest.agent_session("Set up production"), [DATABASE])
    page = open_page(fresh_clarion, viewport=viewport)
    card = bundle_card(page, pending_id)
    expect(page.locator("article")).to_have_count(6)
    field = card.get_by_label("Your own answer (optional)").nth(1)
    status = status_region(page)

    for block in ("end", "start"):
        expect(status).to_have_text("")
        field.evaluate(f"el => el.scrollIntoView({{block: '{block}'}})")
        field.click()
        field.press_sequentially("Keep ")
        before = _box(field)
        seen = _controls(page)
        index = [c["control"] for c in seen].index(
            field.evaluate("el => el.outerHTML.slice(0, 80)")
        )
        rest.create_bundle(rest.agent_session("Another task"), [DATABASE])
        expect(status).to_have_text("1 new question arrived.")

        assert _box(field) == before, f"the message moved the field ({block})"
        # The new question's card comes last; the controls before it are compared.
        after = _controls(page)[: len(seen)]
        assert [c["box"] for c in after] == [c["box"] for c in seen], f"controls moved ({block})"
        covered = [
            was["control"]
            for was, now in zip(seen, after, strict=True)
            if any(v and not n for v, n in zip(was["visible"], now["visible"], strict=True))
        ]
        assert covered == [], f"the message covers controls ({block})"
        assert all(after[index]["visible"]), f"the field is not fully visible ({block})"
        field.click(timeout=2000)
        field.press_sequentially("SSO. ")
        # The message clears itself; wait for it before the next position.
        expect(status).to_have_text("", timeout=15_000)
    expect(field).to_have_value("Keep SSO. Keep SSO. ")
