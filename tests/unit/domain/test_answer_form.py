"""The one answer-form model (#32): its fields and names, the one parser from flat field
values to a validated outcome (N6–N8b), and errors that name a form field."""

from __future__ import annotations

from typing import Any

import pytest

from clarion.domain.answer_form import (
    FORM,
    NOTHING_CHOSEN,
    REASON,
    SKIP,
    AnswerForm,
    FieldKind,
    FormError,
    FormField,
    FormValues,
    field_of,
    question_of,
)
from clarion.domain.model import Answer, Option, Outcome, Question

QUESTIONS = (
    Question(id="db", prompt="Which database?", options=(Option("pg"), Option("lite"))),
    Question(id="name", prompt="Service name?"),
)
FORM_OF = AnswerForm(QUESTIONS)


def test_the_fields_are_per_question_options_and_text_then_skip_and_reason() -> None:
    assert list(FORM_OF.fields()) == [
        FormField("q0_options", FieldKind.OPTIONS, 0),
        FormField("q0_text", FieldKind.TEXT, 0),
        FormField("q1_text", FieldKind.TEXT, 1),  # no options offered: no options field
        FormField(SKIP, FieldKind.SKIP),
        FormField(REASON, FieldKind.REASON),
    ]


def test_flat_values_become_one_answer_per_question_in_option_order_kept_as_sent() -> None:
    outcome = FORM_OF.parse({"q0_options": ["lite", "pg"], "q1_text": "api", "extra": 1})
    assert outcome == Outcome.answer(Answer("db", ("lite", "pg"), ""), Answer("name", (), "api"))


def test_a_single_option_string_is_one_choice_and_an_empty_one_none() -> None:
    assert FORM_OF.parse({"q0_options": "pg"}).answers[0].selected_options == ("pg",)
    assert FORM_OF.read({"q0_options": ""}).selected[0] == ()


def test_skip_rejects_with_the_reason_and_ignores_the_answers() -> None:
    values = {SKIP: True, REASON: "later", "q0_options": ["made-up"], "q1_text": "x" * 2001}
    assert FORM_OF.parse(values) == Outcome.reject("later")


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"q0_options": [1]}, "q0_options"),
        ({"q0_options": 3}, "q0_options"),
        ({"q1_text": 3}, "q1_text"),
        ({SKIP: "yes"}, SKIP),
        ({SKIP: True, REASON: ["no"]}, REASON),
    ],
)
def test_a_value_of_the_wrong_type_names_its_field(values: dict[str, Any], field: str) -> None:
    with pytest.raises(FormError) as caught:
        FORM_OF.read(values)
    assert caught.value.field == field


def test_nothing_chosen_is_a_form_error_unless_an_empty_answer_is_allowed() -> None:
    with pytest.raises(FormError) as caught:
        FORM_OF.parse({"q0_text": "  ", "q1_text": ""})
    assert (caught.value.field, caught.value.message) == (FORM, NOTHING_CHOSEN)
    empty = FORM_OF.parse({}, require_answer=False)
    assert empty == Outcome.answer(Answer("db"), Answer("name"))


def test_every_overlong_text_is_reported_at_once_in_a_persons_words() -> None:
    with pytest.raises(FormError) as caught:
        FORM_OF.parse({"q0_text": "ö" * 2001, "q1_text": "x" * 2345})
    assert caught.value.field == "q0_text"
    assert caught.value.errors == {
        "q0_text": "At most 2,000 characters, please (this has 2,001).",
        "q1_text": "At most 2,000 characters, please (this has 2,345).",
    }
    with pytest.raises(FormError) as reason:
        FORM_OF.parse({SKIP: True, REASON: "y" * 2001})
    assert reason.value.field == REASON


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        (
            {"q0_options": ["made-up"]},
            "q0_options",
            'answer 1 references unknown option_id "made-up"',
        ),
        ({"q1_text": "bad\x00"}, "q1_text", "answer 2 custom_text may not contain NUL"),
        ({SKIP: True, REASON: "no\x00"}, REASON, "reason may not contain NUL"),
    ],
)
def test_the_domains_rules_apply_and_name_the_form_field(
    values: dict[str, Any], field: str, message: str
) -> None:
    """N8, N8b: the domain's validation, its JSON path translated to the form's name."""
    with pytest.raises(FormError) as caught:
        FORM_OF.parse(values)
    assert caught.value.field == field
    assert caught.value.message.startswith(message)


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("answers[0].selected_options", "q0_options"),
        ("answers[1].custom_text", "q1_text"),
        ("answers[1].question_id", "q1_text"),
        ("answers[1]", "q1_text"),
        ("answers[2].custom_text", FORM),  # no such question
        ("reject_reason", REASON),
        ("reason", REASON),
        ("q1_options", "q1_options"),
        ("q7_text", FORM),
        ("answers", FORM),
        ("question_id", FORM),
        ("", FORM),
    ],
)
def test_field_of_translates_a_path_into_the_forms_name(path: str, field: str) -> None:
    assert field_of(path, 2) == field


def test_form_values_keep_what_was_sent_for_a_re_render() -> None:
    values = FORM_OF.read({"q0_options": ["pg"], "q1_text": "mine", REASON: "r"})
    assert values == FormValues(selected=(("pg",), ()), texts=("", "mine"), reason="r")
    assert values.options_at(5) == ()
    assert values.text_at(5) == ""
    assert not values.is_empty()


def test_question_of_names_the_position_a_field_belongs_to() -> None:
    assert [question_of(name) for name in ("q0_options", "q3_text", SKIP, REASON, FORM)] == [
        0,
        3,
        None,
        None,
        None,
    ]
