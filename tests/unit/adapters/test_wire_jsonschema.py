"""The schemas generated from the wire models accept exactly what the converter writes."""

from __future__ import annotations

import typing
from typing import Any

import attrs
import jsonschema as validator  # type: ignore[import-untyped]
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clarion.adapters.mcp import arguments
from clarion.adapters.wire import convert, jsonschema, models
from clarion.domain.errors import ValidationError
from tests.strategies import wire_models

_MCP = jsonschema.mcp_dialect(models.OPEN_IN_MCP)
# The omitempty shapes constrain what they write (minItems, minLength, const) beyond their types.
_CLOSED = [kind for kind in models.SHAPES if kind not in models.OMIT_EMPTY]


@pytest.mark.parametrize("kind", _CLOSED, ids=lambda kind: kind.__name__)
@given(data=st.data())
def test_every_written_shape_conforms_to_its_generated_schema(
    kind: type[Any], data: st.DataObject
) -> None:
    raw = convert.unstructure(data.draw(wire_models(kind)))
    validator.validate(raw, jsonschema.object_schema(kind, _MCP))


def test_an_extra_key_or_a_missing_one_is_refused() -> None:
    schema = jsonschema.object_schema(models.Answer, _MCP)
    good = {"question_id": "q", "selected_options": [], "custom_text": ""}
    validator.validate(good, schema)
    with pytest.raises(validator.ValidationError):
        validator.validate({**good, "extra": 1}, schema)
    with pytest.raises(validator.ValidationError):
        validator.validate({"question_id": "q", "selected_options": []}, schema)


def test_openapi_names_nested_models_by_reference_and_defaults_decide_required() -> None:
    schema = jsonschema.object_schema(models.WaitResponse, jsonschema.OPENAPI)
    assert schema["properties"]["answers"] == {
        "type": "array",
        "items": {"$ref": "#/components/schemas/WaitAnswer"},
        "minItems": 1,
    }
    assert schema["required"] == ["pending_id", "responded_at"]
    assert schema["properties"]["rejected"] == {"const": True}


def test_a_union_other_than_optional_has_no_schema() -> None:
    with pytest.raises(TypeError):
        jsonschema.object_schema(_Ambiguous, jsonschema.OPENAPI)


@attrs.frozen
class _Ambiguous:
    value: int | str


# --- the MCP tools' input schemas (issue #16: generated from the argument models) -------------


def _dialect(suffix: str = "_kandev") -> jsonschema.Dialect:
    return jsonschema.mcp_dialect(
        models.OPEN_IN_MCP,
        models.OTHER_PROPERTIES_IN_MCP,
        words={"list_pending": f"list_pending_questions{suffix}"},
    )


def test_a_tool_input_omits_an_empty_required_list_openapi_keeps_it() -> None:
    """Issue #16: upstream's list tools publish no ``required``; OpenAPI bodies always do."""
    assert "required" not in jsonschema.object_schema(models.ListPendingInput, _dialect())
    assert jsonschema.object_schema(models.SessionIn, jsonschema.OPENAPI)["required"] == []


def test_descriptions_name_the_configured_tool_and_stay_out_of_openapi() -> None:
    """Issue #16: an argument's description is MCP-only and cites the configured tool name."""
    answers = jsonschema.object_schema(models.AnswerInput, _dialect("_x"))["properties"]
    question_id = answers["answers"]["items"]["properties"]["question_id"]
    assert (
        question_id["description"] == "The question's question_id, from list_pending_questions_x."
    )
    assert (
        "description"
        not in jsonschema.components([models.AnswerIn])["AnswerIn"]["properties"]["question_id"]
    )


def test_per_dialect_required_hidden_and_keywords() -> None:
    """Issue #16: one model, two published schemas — the REST body's (closed, minLength, every
    field) and the ask tool's (upstream's: open, described, no ``option_id``)."""
    rest = jsonschema.object_schema(models.QuestionIn, jsonschema.OPENAPI)
    tool = jsonschema.object_schema(models.QuestionIn, _dialect())
    assert rest["required"] == tool["required"] == ["prompt", "options"]
    assert rest["properties"]["prompt"] == {"type": "string", "minLength": 1}
    assert tool["properties"]["prompt"] == {
        "type": "string",
        "description": "The question text shown to the user.",
    }
    assert rest["additionalProperties"] is False
    assert "additionalProperties" not in tool
    option = tool["properties"]["options"]["items"]
    assert list(option["properties"]) == ["label", "description"]
    assert (
        "option_id" in jsonschema.object_schema(models.OptionIn, jsonschema.OPENAPI)["properties"]
    )
    assert jsonschema.object_schema(models.AnswerIn, _dialect())["required"] == ["question_id"]
    assert jsonschema.object_schema(models.AnswerIn, jsonschema.OPENAPI)["required"] == []


def test_keys_come_type_description_keywords_then_items() -> None:
    """docs/mcp-tools.md prints the schemas in key order; the order is the generator's, not the
    metadata's."""
    questions = jsonschema.object_schema(models.AskInput, _dialect())["properties"]["questions"]
    assert list(questions) == ["type", "description", "minItems", "maxItems", "items"]


def test_other_properties_take_the_mapped_model() -> None:
    """The ask result: ``rejected``/``reject_reason`` plus one entry per question id (§2.9)."""
    schema = jsonschema.object_schema(models.AskOutput, _dialect())
    answered = {
        "answered": True,
        "selected_option": "o",
        "selected_options": ["o"],
        "custom_text": "",
        "rejected": False,
    }
    validator.validate({"rejected": False, "reject_reason": "", "q1": answered}, schema)
    with pytest.raises(validator.ValidationError):
        validator.validate({"rejected": False, "reject_reason": "", "q1": {"answered": 1}}, schema)


def test_the_answer_tool_publishes_what_the_respond_parser_reads() -> None:
    """N9: the answer tool's arguments are ``pending_id`` plus a respond body, field for field
    (the parser hands everything but ``pending_id`` to :class:`RespondRequest`)."""
    tool = list(typing.get_type_hints(models.AnswerInput).items())
    body = list(typing.get_type_hints(models.RespondRequest).items())
    assert tool == [("pending_id", str), *body]


@pytest.mark.parametrize(
    ("parse", "shape"),
    [
        (arguments.parse_list_pending, models.ListPendingInput),
        (arguments.parse_list_tasks, models.ListTasksInput),
        (arguments.parse_ask, models.AskInput),
    ],
)
def test_the_parsers_refuse_exactly_what_the_input_models_do_not_name(
    parse: Any, shape: type[Any]
) -> None:
    """Facts §9.1: an argument the published schema does not name is refused, naming it."""
    with pytest.raises(ValidationError) as refused:
        parse({"reason": "x"})
    assert refused.value.field == "reason"
    named = set(jsonschema.object_schema(shape, _dialect())["properties"])
    assert named == {field.name for field in attrs.fields(shape)}
