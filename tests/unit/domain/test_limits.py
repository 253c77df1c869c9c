"""The bounds in ``clarion.domain.limits``: counted in code points, refused naming the field."""

from __future__ import annotations

import pytest

from clarion.domain.errors import InvalidQuestions
from clarion.domain.limits import Limits, validate_context
from clarion.domain.questions import OptionDraft, QuestionDraft, validate_questions

ASTRAL = "𝄞"  # one code point, two UTF-16 units, four UTF-8 bytes


def _question(prompt: str) -> QuestionDraft:
    options = (OptionDraft("A", "first"), OptionDraft("B", "second"))
    return QuestionDraft(prompt=prompt, options=options)


def test_lengths_are_code_points_and_the_refusal_names_field_and_limit() -> None:
    limits = Limits(max_prompt=3)
    assert validate_questions([_question(ASTRAL * 3)], limits)[0].prompt == ASTRAL * 3
    with pytest.raises(InvalidQuestions) as error:
        validate_questions([_question(ASTRAL * 4)], limits)
    assert error.value.field == "questions[0].prompt"
    assert error.value.message == (
        "questions[0].prompt is too long: 4 characters, the limit for a prompt is 3"
    )


def test_paragraphs_replace_the_context_each_within_its_limit_and_joined_within_the_total() -> None:
    limits = Limits(max_context=12, max_context_paragraph=5)
    assert validate_context("ignored", limits, ["abcde", "fghij"]) == "abcde\n\nfghij"
    assert validate_context("kept", limits) == "kept"
    with pytest.raises(InvalidQuestions) as paragraph:
        validate_context("", limits, ["abcde", "abcdef"])
    assert paragraph.value.field == "context_paragraphs[1]"
    with pytest.raises(InvalidQuestions) as joined:
        validate_context("", limits, ["abcde", "fghij", "k"])
    assert joined.value.field == "context"


@pytest.mark.parametrize("field", ["max_prompt", "max_body_bytes", "max_event_streams"])
def test_a_limit_below_one_is_refused(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Limits(**{field: 0})


def test_an_idle_time_must_be_positive() -> None:
    with pytest.raises(ValueError, match="mcp_session_idle_s"):
        Limits(mcp_session_idle_s=0)


@pytest.mark.parametrize("bad", ["a\x00b", "lone \udc00"])
def test_question_text_no_store_can_keep_is_refused_naming_its_field(bad: str) -> None:
    """#29: the ask side too refuses NUL and lone surrogates in the domain, so a caller that
    bypasses the wire checks (an embedding host, a new surface) still gets a 400, not a store
    failure."""
    cases = [
        (QuestionDraft(prompt=bad, options=_question("p").options), "questions[0].prompt"),
        (
            QuestionDraft(prompt="p", options=(OptionDraft(bad, "d"), OptionDraft("B", "e"))),
            "questions[0].options[0].label",
        ),
        (
            QuestionDraft(prompt="p", options=_question("p").options, title=bad),
            "questions[0].title",
        ),
    ]
    for draft, field in cases:
        with pytest.raises(InvalidQuestions) as error:
            validate_questions([draft])
        assert error.value.field == field
    with pytest.raises(InvalidQuestions) as context:
        validate_context("", Limits(), [bad])
    assert context.value.field == "context_paragraphs[0]"
