"""Issue #30's closing reasons are a typed value (#32, like a resolution's status): a store's
text becomes one of the four, and anything else is refused rather than carried on as a
string the wire's ``closed_reason`` cannot hold."""

from __future__ import annotations

import pytest

from clarion.domain.history import CLOSED_REASONS, CLOSED_WHY, as_closed_reason


@pytest.mark.parametrize("text", ["superseded", "session_ended", "expired", "cancelled"])
def test_each_reason_the_history_names_is_read_back_as_itself(text: str) -> None:
    assert as_closed_reason(text) == text
    assert text in CLOSED_REASONS
    assert text in CLOSED_WHY


@pytest.mark.parametrize("text", ["", "answered", "pending", "Expired", "closed"])
def test_any_other_text_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="not a closing reason"):
        as_closed_reason(text)
