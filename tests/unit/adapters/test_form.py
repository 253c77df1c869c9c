"""The elicitation form: a spec-valid flat schema in both protocol eras, and the outcome a
submitted form stands for."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import _v2025_11_25, _v2026_07_28
from pydantic import TypeAdapter

from clarion.adapters.mcp.form import form_message, form_outcome, form_schema, schema_key
from clarion.domain.answer_form import AnswerForm
from clarion.domain.errors import InvalidOutcome
from clarion.domain.model import Answer, Option, Outcome, Question

QUESTIONS = (
    Question(
        id="db",
        prompt="Which database?",
        title="Database",
        options=(
            Option("q1_opt1", "SQLite", "Embedded"),
            Option("q1_opt2", "PostgreSQL", ""),
        ),
    ),
    Question(
        id="name", prompt="Service name?", options=(Option("q2_opt1", "a"), Option("q2_opt2", "b"))
    ),
)


@pytest.mark.parametrize(
    "definition",
    [_v2025_11_25.PrimitiveSchemaDefinition, _v2026_07_28.PrimitiveSchemaDefinition],
    ids=["2025-11-25", "2026-07-28"],
)
def test_every_form_field_is_a_primitive_schema_definition_of_both_eras(definition: Any) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(definition)
    schema = form_schema(QUESTIONS)
    assert schema["type"] == "object"
    assert "required" not in schema  # every field may be left empty
    for prop in schema["properties"].values():
        adapter.validate_python(prop, strict=False)
    choice = schema["properties"]["q1_choice"]
    assert choice["title"] == "Database"
    assert "Which database?" in choice["description"]
    assert "- SQLite: Embedded" in choice["description"]
    assert schema["properties"]["q2_choice"]["title"] == "Question 2"


def test_the_message_carries_the_context() -> None:
    assert "Shared background." in form_message(QUESTIONS, "  Shared background. ")
    assert form_message(QUESTIONS[:1], "").startswith("The agent asks you one question.")


def test_a_submitted_form_is_one_answer_per_question_in_question_order() -> None:
    content = {"q2_text": "mine", "q1_choice": ["q1_opt2", "q1_opt1"], "skip": False}
    assert form_outcome(QUESTIONS, content) == Outcome.answer(
        Answer("db", ("q1_opt2", "q1_opt1"), ""), Answer("name", (), "mine")
    )


def test_a_single_choice_string_counts_as_one_selected_option() -> None:
    outcome = form_outcome(QUESTIONS, {"q1_choice": "q1_opt1"})
    assert outcome.answers[0].selected_options == ("q1_opt1",)


def test_skip_is_a_rejection_with_its_reason() -> None:
    assert form_outcome(QUESTIONS, {"skip": True, "skip_reason": "later", "q1_choice": ["x"]}) == (
        Outcome.reject("later")
    )


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ({"q1_choice": [1]}, "q1_choice"),
        ({"q1_text": 3}, "q1_text"),
        ({"skip": "yes"}, "skip"),
        ({"skip": True, "skip_reason": ["no"]}, "skip_reason"),
    ],
)
def test_a_field_of_the_wrong_type_is_an_invalid_outcome_naming_it(
    content: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidOutcome) as caught:
        form_outcome(QUESTIONS, content)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ({"q2_text": "x" * 2001}, "q2_text"),
        ({"q1_choice": ["made-up"]}, "q1_choice"),
        ({"skip": True, "skip_reason": "y" * 2001}, "skip_reason"),
    ],
)
def test_the_forms_rules_are_the_answer_forms_named_by_this_schemas_keys(
    content: dict[str, Any], field: str
) -> None:
    """#32: the one answer form's parser (N8, N8b) reads the form; its errors name the pinned
    property, not the form model's own name for it."""
    with pytest.raises(InvalidOutcome) as caught:
        form_outcome(QUESTIONS, content)
    assert caught.value.field == field
    assert caught.value.message.startswith(f"{field}: ")


def test_the_schemas_keys_are_the_answer_forms_fields_renamed() -> None:
    form = AnswerForm(QUESTIONS)
    assert [schema_key(field.name) for field in form.fields()] == list(
        form_schema(QUESTIONS)["properties"]
    )
    assert schema_key("form") == "form"


def test_an_accepted_empty_form_is_left_to_the_caller() -> None:
    assert form_outcome(QUESTIONS, {}) == Outcome.answer(Answer("db"), Answer("name"))
