"""A notification's deep link ``<inbox>/#<pending_id>`` (issue #17) opens the inbox with that
bundle focused and marked, and following another link moves the focus."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.e2e.actors import AgentSession, Rest, question
from tests.e2e.conftest import PageFactory
from tests.e2e.inbox import bundle_card
from tests.e2e.server import ServedClarion


def _drink(n: int) -> dict[str, Any]:
    # Distinct questions: identical ones in one session would be the same bundle (dedup).
    return question(f"Drink {n}: coffee or tea?", [("Coffee", "Black"), ("Tea", "Green")])


def test_the_deep_link_opens_and_focuses_its_bundle(
    open_page: PageFactory, clarion: ServedClarion, rest: Rest, agent_session: AgentSession
) -> None:
    ids = [rest.create_bundle(agent_session, [_drink(n)]) for n in range(3)]
    assert len(set(ids)) == 3
    page = open_page(clarion, navigate=False)
    page.goto(clarion.url(f"/#{ids[1]}"))
    target = bundle_card(page, ids[1])
    expect(target).to_be_focused()
    expect(target).to_have_class(re.compile(r"\btargeted\b"))
    expect(target).to_be_in_viewport()
    expect(bundle_card(page, ids[0])).not_to_have_class(re.compile(r"\btargeted\b"))

    page.evaluate(f"window.location.hash = {ids[2]!r}")
    expect(bundle_card(page, ids[2])).to_be_focused()
    expect(target).not_to_have_class(re.compile(r"\btargeted\b"))
