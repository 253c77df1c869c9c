"""Direction controls in text written by an agent or a person stay inside their own label
(issue #14): a right-to-left override cannot reorder the labels around it."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.e2e.actors import AgentSession, ask, question
from tests.e2e.inbox import session_cards
from tests.e2e.server import ServedClarion

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE, never closed
SPOOF = question(
    f"Deploy {RLO}to production?",
    [(f"Yes{RLO} deploy", f"Ships {RLO}now"), ("No", "Wait")],
    qid="deploy",
    title=f"Deploy{RLO}",
)
SECOND = question(
    "Which region?", [("EU", "Frankfurt"), ("US", "Virginia")], qid="region", title="Region"
)

# Every text node that holds a direction control (U+202A-U+202E, U+2066-U+2069) must be the
# whole content of a <bdi> that the browser isolates.
_UNISOLATED = """(root) => {
  const controls = /[\\u202a-\\u202e\\u2066-\\u2069]/;
  const found = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    const isolate = parent.tagName === "BDI" && parent.childNodes.length === 1
      && getComputedStyle(parent).unicodeBidi === "isolate";
    if (controls.test(node.data) && !isolate) found.push(node.data);
  }
  return found;
}"""
_ISOLATED_COUNT = """(root) => [...root.querySelectorAll("bdi")]
  .filter((el) => el.textContent.includes("\\u202e")).length"""


def _left(locator: Locator) -> float:
    box = locator.bounding_box()
    assert box is not None
    return float(box["x"])


def _assert_in_reading_order(container: Locator, texts: list[str]) -> None:
    """The isolates holding ``texts`` are laid out left to right in that order."""
    lefts = [_left(container.locator("bdi", has_text=text).first) for text in texts]
    assert lefts == sorted(lefts), list(zip(texts, lefts, strict=True))


def test_an_override_character_stays_inside_its_own_label(
    page: Page, clarion: ServedClarion, agent_session: AgentSession
) -> None:
    arguments: dict[str, Any] = {"questions": [SPOOF, SECOND], "context": f"Context {RLO}here"}
    waiting = ask(clarion.base_url, agent_session, arguments)
    card = session_cards(page, agent_session.session_id)
    expect(card).to_have_count(1)

    assert card.evaluate(_UNISOLATED) == []
    # The two titles, the prompt, the option label and description, and the context.
    assert card.evaluate(_ISOLATED_COUNT) == 6
    _assert_in_reading_order(card.locator("h5"), ["Deploy", "·", "Region"])

    card.locator('input[value="q1_opt1"]').check()
    card.locator('input[value="q2_opt1"]').check()
    card.get_by_role("button", name="Submit answer").click()
    expect(card.get_by_text("Your answer was sent to the agent.")).to_be_visible()

    assert card.evaluate(_UNISOLATED) == []
    recorded = card.locator("dl.recorded")
    expect(recorded.locator("dd")).to_have_count(2)
    assert recorded.evaluate(_ISOLATED_COUNT) == 2  # the title (dt) and the chosen label (dd)
    received = waiting.result(timeout=10)
    assert received["deploy"]["selected_options"] == ["q1_opt1"]
