"""Issue #31 item 2: what an asking client's response to an offered question means — a host
that could not show it (too fast for a person), a person's rejection, or a dismissal."""

from __future__ import annotations

import pytest

from clarion.adapters.mcp.elicitation import Offer, Verdict, is_empty_form, judge

HUMAN_S = 0.25


@pytest.mark.parametrize("action", ["decline", "cancel"])
@pytest.mark.parametrize("offer", list(Offer))
def test_a_decline_or_cancel_faster_than_a_person_is_not_shown(offer: Offer, action: str) -> None:
    assert judge(offer, action, 0.02, HUMAN_S) is Verdict.NOT_SHOWN
    assert judge(offer, action, 0.2499, HUMAN_S) is Verdict.NOT_SHOWN


def test_a_persons_decline_of_a_form_that_offered_skip_is_a_rejection() -> None:
    assert judge(Offer.FORM, "decline", 2.0, HUMAN_S) is Verdict.REJECT
    assert judge(Offer.FORM, "decline", HUMAN_S, HUMAN_S) is Verdict.REJECT  # at the threshold


def test_a_persons_cancel_and_a_declined_link_leave_the_question_open() -> None:
    assert judge(Offer.FORM, "cancel", 2.0, HUMAN_S) is Verdict.DISMISSED
    assert judge(Offer.URL, "decline", 2.0, HUMAN_S) is Verdict.DISMISSED
    assert judge(Offer.URL, "cancel", 2.0, HUMAN_S) is Verdict.DISMISSED


def test_an_accept_is_always_the_persons_however_fast() -> None:
    assert judge(Offer.FORM, "accept", 0.0, HUMAN_S) is Verdict.ANSWER
    assert judge(Offer.URL, "accept", 0.0, HUMAN_S) is Verdict.OPENED


def test_a_zero_threshold_takes_every_decline_as_a_persons() -> None:
    assert judge(Offer.FORM, "decline", 0.0, 0.0) is Verdict.REJECT


def test_an_accepted_form_with_nothing_in_it_is_empty() -> None:
    """Codex renders a multi-select as a bare approval and accepts with ``{}``."""
    assert is_empty_form(None)
    assert is_empty_form({})
    assert is_empty_form({"q1_choice": [], "q1_text": "", "skip": False, "skip_reason": None})
    assert not is_empty_form({"q1_choice": ["q1_opt1"]})
    assert not is_empty_form({"q1_text": "x"})
    assert not is_empty_form({"skip": True})
