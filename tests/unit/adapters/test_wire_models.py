"""Every wire shape survives the JSON converter both ways, through real JSON text."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clarion.adapters.wire import convert, models
from tests.strategies import wire_models

_MOMENT = datetime(2024, 5, 1, 12, 0, 0, 500000, tzinfo=UTC)


@pytest.mark.parametrize("kind", models.SHAPES + models.REQUESTS, ids=lambda kind: kind.__name__)
@given(data=st.data())
def test_every_shape_round_trips_through_json_text(kind: type[Any], data: st.DataObject) -> None:
    shape = data.draw(wire_models(kind))
    text = json.dumps(convert.unstructure(shape))
    assert convert.structure_shape(json.loads(text), kind) == shape


@given(wire_models(models.Response))
def test_r12_every_response_key_is_written_even_when_empty(shape: models.Response) -> None:
    raw = convert.unstructure(shape)
    assert list(raw) == ["pending_id", "answers", "rejected", "reject_reason", "responded_at"]
    for answer in raw["answers"]:
        assert list(answer) == ["question_id", "selected_options", "custom_text"]


def test_the_wait_shape_leaves_out_what_is_empty() -> None:
    raw = json.loads(
        json.dumps(
            convert.unstructure(
                models.WaitResponse(
                    pending_id="p",
                    answers=[models.WaitAnswer(question_id="q")],
                    responded_at=_MOMENT,
                )
            )
        )
    )
    assert raw == {
        "pending_id": "p",
        "answers": [{"question_id": "q"}],
        "responded_at": "2024-05-01T12:00:00.5Z",
    }
