"""Outcome validation: N6, N6a, N7, N8, N8a, N8b and L16.

Every test asserts the error type and the named field, never the message prose, and each rule is
broken in isolation: no test pins which rule wins among several (N8d).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clarion.domain import (
    ANSWERED,
    MAX_TEXT_CODE_POINTS,
    Answer,
    InvalidOutcome,
    Option,
    Outcome,
    Question,
    ValidationError,
    bundle_questions,
    parse_row,
    validate_outcome,
)
from tests.strategies import (
    bundle_row_list,
    bundles,
    clarification_record,
    question_sets,
    valid_outcomes,
)

COLOR = Question(
    id="color",
    prompt="Which colour?",
    options=(Option("red", "Red", "warm"), Option("blue", "Blue", "cool")),
)
SIZE = Question(
    id="size",
    prompt="Which size?",
    options=(Option("s", "S", "small"), Option("m", "M", "medium"), Option("l", "L", "large")),
)
# Read back through parse_row, as the resolver does (N6a: one expected answer per durable row).
TWO = bundle_questions(bundle_row_list([COLOR, SIZE]))
ONE = bundle_questions(bundle_row_list([COLOR]))


def _field_of(questions: tuple[Question, ...], outcome: Outcome) -> str:
    with pytest.raises(InvalidOutcome) as caught:
        validate_outcome(questions, outcome)
    assert isinstance(caught.value, ValidationError)
    return caught.value.field


def test_complete_answers_are_accepted() -> None:
    validate_outcome(TWO, Outcome.answer(Answer("color", ("red",)), Answer("size", ("m",))))


def test_answers_may_arrive_in_any_order() -> None:
    validate_outcome(TWO, Outcome.answer(Answer("size", ("m",)), Answer("color", ("red",))))


@settings(max_examples=60)
@given(st.data())
def test_every_generated_valid_outcome_is_accepted(data: st.DataObject) -> None:
    question_set, rows = data.draw(bundles())
    validate_outcome(bundle_questions(rows), data.draw(valid_outcomes(question_set)))


# N6 condition 1: exactly one entry per question.
@pytest.mark.parametrize(
    "answers",
    [
        (Answer("color", ("red",)),),
        (Answer("color", ("red",)), Answer("size", ("m",)), Answer("extra")),
    ],
    ids=["too-few", "too-many"],
)
def test_n6_an_answer_count_other_than_one_per_question_is_rejected(
    answers: tuple[Answer, ...],
) -> None:
    assert _field_of(TWO, Outcome(answers=answers)) == "answers"


def test_n6_an_entry_with_an_empty_question_id_is_rejected() -> None:
    outcome = Outcome.answer(Answer("color", ("red",)), Answer("", ("m",)))
    assert _field_of(TWO, outcome) == "answers[1].question_id"


def test_n6_an_entry_naming_a_question_outside_the_bundle_is_rejected() -> None:
    outcome = Outcome.answer(Answer("nope", ("red",)), Answer("size", ("m",)))
    assert _field_of(TWO, outcome) == "answers[0].question_id"


def test_n6_an_entry_repeating_a_question_id_is_rejected() -> None:
    outcome = Outcome.answer(Answer("color", ("red",)), Answer("color", ("blue",)))
    assert _field_of(TWO, outcome) == "answers[1].question_id"


def test_n6a_expected_answers_count_every_durable_row_even_already_terminal_ones() -> None:
    pending = parse_row(clarification_record(COLOR, index=0, total=2))
    answered = parse_row(
        clarification_record(
            SIZE,
            index=1,
            total=2,
            extra={"status": ANSWERED, "response": {"question_id": "size", "selected_options": []}},
        )
    )
    questions = bundle_questions([answered, pending])
    assert [q.id for q in questions] == ["color", "size"]
    assert _field_of(questions, Outcome.answer(Answer("color", ("red",)))) == "answers"
    validate_outcome(questions, Outcome.answer(Answer("color", ("red",)), Answer("size")))


def test_n7_an_entry_with_neither_options_nor_text_is_accepted() -> None:
    validate_outcome(ONE, Outcome.answer(Answer("color")))


def test_n7_an_entry_with_both_options_and_text_is_accepted() -> None:
    validate_outcome(ONE, Outcome.answer(Answer("color", ("red",), "and a bit of blue")))


def test_n8_an_unknown_option_id_is_rejected() -> None:
    outcome = Outcome.answer(Answer("color", ("red",)), Answer("size", ("m", "xl")))
    assert _field_of(TWO, outcome) == "answers[1].selected_options"


def test_n8_an_option_of_another_question_is_rejected() -> None:
    outcome = Outcome.answer(Answer("color", ("m",)), Answer("size", ("m",)))
    assert _field_of(TWO, outcome) == "answers[0].selected_options"


def test_n8_several_valid_options_are_accepted_there_is_no_cardinality_rule() -> None:
    validate_outcome(TWO, Outcome.answer(Answer("color", ("red", "blue")), Answer("size")))
    validate_outcome(
        TWO, Outcome.answer(Answer("color"), Answer("size", ("l", "s", "m", "s", "l")))
    )


def test_l15_a_question_without_parseable_options_accepts_text_but_no_option() -> None:
    row = parse_row(
        clarification_record(COLOR, index=0, total=1, extra={"question": "not an object"})
    )
    questions = bundle_questions([row])
    assert questions == (Question(id="color"),)
    validate_outcome(questions, Outcome.answer(Answer("color", (), "free text only")))
    field = _field_of(questions, Outcome.answer(Answer("color", ("red",))))
    assert field == "answers[0].selected_options"


def test_n8a_rejection_combined_with_answers_is_rejected() -> None:
    outcome = Outcome(answers=(Answer("color", ("red",)),), rejected=True)
    assert _field_of(ONE, outcome) == "answers"


def test_n8a_rejection_with_empty_answers_is_accepted() -> None:
    validate_outcome(TWO, Outcome.reject())
    validate_outcome(TWO, Outcome.reject("not my call"))


@pytest.mark.parametrize("questions", [ONE, TWO], ids=["one-question", "two-questions"])
def test_n8a_not_rejected_with_empty_answers_is_rejected_even_for_one_question(
    questions: tuple[Question, ...],
) -> None:
    assert _field_of(questions, Outcome()) == "answers"


# N8b: the cap counts code points on the raw input, astral characters included.
CAP = MAX_TEXT_CODE_POINTS
FILLERS = ["a", "😀", "𠀋", "本"]


def test_n8b_cap_is_2000_code_points() -> None:
    assert CAP == 2000


@pytest.mark.parametrize("filler", FILLERS)
def test_n8b_reason_of_2000_code_points_is_accepted(filler: str) -> None:
    reason = filler * CAP
    assert len(reason) == CAP
    validate_outcome(ONE, Outcome.reject(reason))


@pytest.mark.parametrize("filler", FILLERS)
def test_n8b_reason_of_2001_code_points_is_rejected(filler: str) -> None:
    assert _field_of(ONE, Outcome.reject(filler * (CAP + 1))) == "reject_reason"


@pytest.mark.parametrize("filler", FILLERS)
def test_n8b_reason_of_2001_with_trailing_space_is_rejected_before_trimming(filler: str) -> None:
    assert _field_of(ONE, Outcome.reject(filler * CAP + " ")) == "reject_reason"


def test_n8b_stray_reason_on_the_answers_path_is_still_capped() -> None:
    outcome = Outcome(answers=(Answer("color"),), reject_reason="x" * (CAP + 1))
    assert _field_of(ONE, outcome) == "reject_reason"


@pytest.mark.parametrize("filler", FILLERS)
def test_n8b_custom_text_of_2000_code_points_is_accepted(filler: str) -> None:
    validate_outcome(TWO, Outcome.answer(Answer("color"), Answer("size", (), filler * CAP)))


@pytest.mark.parametrize("filler", FILLERS)
def test_n8b_custom_text_of_2001_code_points_is_rejected(filler: str) -> None:
    outcome = Outcome.answer(Answer("color"), Answer("size", (), filler * (CAP + 1)))
    assert _field_of(TWO, outcome) == "answers[1].custom_text"


@pytest.mark.parametrize("filler", FILLERS)
def test_n8b_custom_text_of_2001_with_trailing_space_is_rejected_before_trimming(
    filler: str,
) -> None:
    outcome = Outcome.answer(Answer("color", (), filler * CAP + " "), Answer("size"))
    assert _field_of(TWO, outcome) == "answers[0].custom_text"


def _bundle_with_missing_question_id() -> tuple[Question, ...]:
    good = parse_row(clarification_record(COLOR, index=0, total=2))
    nameless = parse_row(
        clarification_record(
            SIZE,
            index=1,
            total=2,
            extra={"question_id": "", "question": {"prompt": "Which size?", "options": []}},
        )
    )
    return bundle_questions([good, nameless])


def test_l16_a_bundle_with_a_missing_question_id_rejects_answers() -> None:
    questions = _bundle_with_missing_question_id()
    outcome = Outcome.answer(Answer("color", ("red",)), Answer("size"))
    assert _field_of(questions, outcome) == "question_id"


def test_l16_a_bundle_with_a_missing_question_id_rejects_a_rejection_too() -> None:
    assert _field_of(_bundle_with_missing_question_id(), Outcome.reject()) == "question_id"


@settings(max_examples=40)
@given(question_sets(), st.data())
def test_n6_dropping_any_one_answer_is_rejected_naming_answers(
    question_set: tuple[Question, ...], data: st.DataObject
) -> None:
    complete = [Answer(question.id) for question in question_set]
    missing = data.draw(st.integers(0, len(complete) - 1))
    outcome = Outcome(answers=tuple(complete[:missing] + complete[missing + 1 :]))
    assert _field_of(question_set, outcome) == "answers"


@pytest.mark.parametrize("bad", ["a\x00b", "\x00", "lone \ud800 surrogate"])
def test_text_no_store_can_keep_is_invalid_naming_its_field(bad: str) -> None:
    """#29: NUL (PostgreSQL text refuses it) or a lone surrogate in free text or a reason is a
    validation error on every surface — the answer link, Slack, elicitation — not a store
    failure."""
    answer = Outcome.answer(Answer(question_id="color", selected_options=("red",), custom_text=bad))
    assert _field_of(ONE, answer) == "answers[0].custom_text"
    assert _field_of(ONE, Outcome.reject(bad)) == "reject_reason"
