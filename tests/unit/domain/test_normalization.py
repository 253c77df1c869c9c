"""N3a/P1b normalization and the Go-compatible ``trim``."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clarion.domain import (
    ANSWERED,
    REJECTED,
    Answer,
    Option,
    Outcome,
    Question,
    bundle_questions,
    normalize_outcome,
    responses_by_question,
    trim,
    validate_outcome,
)
from tests.strategies import (
    TRIMMABLE_WHITESPACE,
    astral_text,
    bundles,
    equivalent_outcomes,
    valid_outcomes,
    whitespace_padding,
)

PICK = Question(
    id="pick",
    prompt="Pick some",
    options=(Option("a", "A", "first"), Option("b", "B", "second"), Option("c", "C", "third")),
)
NOTE = Question(id="note", prompt="Anything else?", options=(Option("y", "Y", "yes"),))


def payload(outcome: Outcome) -> bytes:
    """The N3a answer payload: ``answers``, ``rejected`` and ``reject_reason``, as bytes."""
    fields = attrs.asdict(outcome)
    document = {key: fields[key] for key in ("answers", "rejected", "reject_reason")}
    return json.dumps(document, sort_keys=False, ensure_ascii=False).encode()


@settings(max_examples=50)
@given(st.data())
def test_n3a_permuted_equivalent_submissions_normalize_to_identical_bytes(
    data: st.DataObject,
) -> None:
    question_set, rows = data.draw(bundles())
    questions = bundle_questions(rows)
    first = data.draw(valid_outcomes(question_set))
    second = data.draw(equivalent_outcomes(first))
    validate_outcome(questions, first)
    validate_outcome(questions, second)
    status_1, normal_1 = normalize_outcome(questions, first)
    status_2, normal_2 = normalize_outcome(questions, second)
    assert status_1 == status_2
    assert payload(normal_1) == payload(normal_2)


@settings(max_examples=50)
@given(st.data())
def test_n3a_normalization_is_idempotent(data: st.DataObject) -> None:
    question_set, rows = data.draw(bundles())
    questions = bundle_questions(rows)
    status, once = normalize_outcome(questions, data.draw(valid_outcomes(question_set)))
    validate_outcome(questions, once)
    again_status, twice = normalize_outcome(questions, once)
    assert (again_status, twice) == (status, once)


@settings(max_examples=60)
@given(st.data())
def test_n3a_answers_follow_bundle_order_whatever_the_submission_order(
    data: st.DataObject,
) -> None:
    question_set, rows = data.draw(bundles())
    outcome = data.draw(valid_outcomes(question_set))
    _, normal = normalize_outcome(bundle_questions(rows), outcome)
    if not outcome.rejected:
        assert [a.question_id for a in normal.answers] == [q.id for q in question_set]


def test_n3a_selected_options_are_deduplicated_in_option_order() -> None:
    outcome = Outcome.answer(Answer("pick", ("c", "a", "c", "b", "a")), Answer("note"))
    status, normal = normalize_outcome([PICK, NOTE], outcome)
    assert status == ANSWERED
    assert normal.answers[0].selected_options == ("a", "b", "c")


def test_n3a_answers_are_reordered_to_bundle_order() -> None:
    outcome = Outcome.answer(Answer("note", (), "x"), Answer("pick", ("b",)))
    _, normal = normalize_outcome([PICK, NOTE], outcome)
    assert [a.question_id for a in normal.answers] == ["pick", "note"]


def test_n3a_custom_text_is_trimmed_and_inner_whitespace_kept() -> None:
    outcome = Outcome.answer(Answer("pick"), Answer("note", (), " \t two  words\n\u3000"))
    _, normal = normalize_outcome([PICK, NOTE], outcome)
    assert normal.answers[1].custom_text == "two  words"


def test_n3a_reject_reason_is_trimmed_and_inner_whitespace_kept() -> None:
    status, normal = normalize_outcome([PICK], Outcome.reject("\n  not  now \u00a0"))
    assert status == REJECTED
    assert normal == Outcome(answers=(), rejected=True, reject_reason="not  now")


def test_n3a_stray_reject_reason_on_the_answers_path_is_discarded() -> None:
    outcome = Outcome(answers=(Answer("pick", ("a",)), Answer("note")), reject_reason="why")
    status, normal = normalize_outcome([PICK, NOTE], outcome)
    assert status == ANSWERED
    assert normal.reject_reason == ""
    assert normal.rejected is False


def test_n3a_empty_arrays_are_empty_tuples_never_none() -> None:
    _, answered = normalize_outcome([NOTE], Outcome.answer(Answer("note")))
    _, rejected = normalize_outcome([NOTE], Outcome.reject())
    assert answered.answers[0].selected_options == ()
    assert answered.answers[0].custom_text == ""
    assert rejected.answers == ()
    assert json.loads(payload(rejected))["answers"] == []
    assert json.loads(payload(answered))["answers"][0]["selected_options"] == []


def test_p1a_responses_are_keyed_by_question_id_and_none_for_a_rejection() -> None:
    _, normal = normalize_outcome([PICK, NOTE], Outcome.answer(Answer("note"), Answer("pick")))
    assert responses_by_question(normal) == {"pick": Answer("pick"), "note": Answer("note")}
    assert responses_by_question(Outcome.reject("no")) is None


# Go's strings.TrimSpace trims exactly Unicode White_Space at both ends.
@pytest.mark.parametrize("separator", ["\x1c", "\x1d", "\x1e", "\x1f"])
def test_trim_keeps_the_information_separators_go_does_not_trim(separator: str) -> None:
    assert trim(f" {separator}x{separator} ") == f"{separator}x{separator}"
    assert trim(separator) == separator


@pytest.mark.parametrize("space", [*TRIMMABLE_WHITESPACE, "\u2000", "\u200a", "\u3000"])
def test_trim_strips_unicode_whitespace(space: str) -> None:
    assert trim(f"{space}{space}a {space} b{space}") == f"a {space} b"


def test_trim_of_only_whitespace_is_empty() -> None:
    assert trim(" \t\n\u3000") == ""
    assert trim("") == ""


def test_trim_keeps_characters_that_are_not_white_space() -> None:
    # U+200B ZERO WIDTH SPACE and U+180E are not White_Space; Go keeps them too.
    assert trim("\u200bx\u180e") == "\u200bx\u180e"


@given(whitespace_padding(), astral_text(), whitespace_padding())
def test_trim_removes_exactly_the_padding(left: str, core: str, right: str) -> None:
    assert trim(left + core + right) == trim(core)
    assert trim(trim(core)) == trim(core)
