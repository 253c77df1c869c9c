"""The schemas generated from the wire models accept exactly what the converter writes."""

from __future__ import annotations

from typing import Any

import attrs
import jsonschema as validator  # type: ignore[import-untyped]
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clarion.adapters.wire import convert, jsonschema, models
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
