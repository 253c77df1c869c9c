"""The inbox stays current without a reload: new bundles appear, and a dropped event stream
reconnects by itself and catches up on what it missed."""

from __future__ import annotations

from playwright.sync_api import Page, Route, expect

from tests.e2e.actors import AgentSession, Rest, question
from tests.e2e.conftest import PageFactory
from tests.e2e.inbox import bundle_card, status_region
from tests.e2e.server import ServedClarion

EVENTS = "**/api/v1/events"
COFFEE = question("Coffee or tea?", [("Coffee", "Black"), ("Tea", "Green")])


def test_a_new_bundle_appears_without_a_reload_and_is_announced(
    page: Page, rest: Rest, agent_session: AgentSession
) -> None:
    expect(page.locator("#connection")).to_have_text("Live")
    page.evaluate("window.notReloaded = true")

    pending_id = rest.create_bundle(agent_session, [COFFEE])

    expect(bundle_card(page, pending_id)).to_be_visible()
    expect(status_region(page)).to_have_text("1 new question arrived.")
    assert page.evaluate("window.notReloaded") is True


def test_with_auth_disabled_the_inbox_opens_without_signing_in(page: Page) -> None:
    """Auth disabled: straight to the inbox, and nothing to sign out of."""
    expect(page.get_by_role("heading", name="Questions waiting for an answer")).to_be_visible()
    expect(page.get_by_role("heading", name="Sign in")).to_be_hidden()
    expect(page.get_by_role("button", name="Sign out")).to_be_hidden()


def test_a_refused_event_stream_is_reopened_by_the_page_which_then_catches_up(
    open_page: PageFactory, clarion: ServedClarion, rest: Rest, agent_session: AgentSession
) -> None:
    """While the stream is refused the page says so; once the server accepts it again the page
    reconnects on its own, re-reads the list, and live updates flow again."""
    page = open_page(clarion, navigate=False)

    def refuse(route: Route) -> None:
        route.fulfill(status=503, content_type="application/json", body='{"error": "busy"}')

    page.route(EVENTS, refuse)
    page.goto(clarion.url("/"))
    expect(page.locator("#connection")).to_have_text("Reconnecting…")
    missed = rest.create_bundle(agent_session, [COFFEE])

    page.unroute(EVENTS, refuse)

    expect(page.locator("#connection")).to_have_text("Live")
    expect(bundle_card(page, missed)).to_be_visible()
    later = rest.create_bundle(agent_session, [COFFEE])
    expect(bundle_card(page, later)).to_be_visible()
