"""The shared wire format: always-emit rules (R12, L4a) and strict input parsing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clarion.adapters import wire
from clarion.domain import (
    ANSWERED,
    REJECTED,
    Answer,
    ListedBundle,
    ListedQuestion,
    ListPage,
    Option,
    Resolution,
    ValidationError,
)

_text = st.text(max_size=8)
_answers = st.lists(
    st.builds(
        Answer,
        question_id=_text,
        selected_options=st.lists(_text, max_size=3).map(tuple),
        custom_text=_text,
    ),
    max_size=4,
).map(tuple)
_moments = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)


@st.composite
def _resolutions(draw: st.DrawFn) -> Resolution:
    rejected = draw(st.booleans())
    return Resolution(
        pending_id=draw(_text),
        status=REJECTED if rejected else ANSWERED,
        answers=() if rejected else draw(_answers),
        rejected=rejected,
        reject_reason=draw(_text) if rejected else "",
        responded_at=draw(_moments),
        claimed=draw(st.booleans()),
    )


@given(_resolutions())
def test_r12_respond_body_always_carries_every_key_in_the_raw_json(resolution: Resolution) -> None:
    raw = json.loads(json.dumps(wire.respond_body(resolution)))
    assert set(raw) == {"success", "claimed", "status", "response"}
    assert raw["success"] is True
    response = raw["response"]
    assert list(response) == ["pending_id", "answers", "rejected", "reject_reason", "responded_at"]
    assert isinstance(response["answers"], list)
    assert isinstance(response["rejected"], bool)
    assert isinstance(response["reject_reason"], str)
    for answer in response["answers"]:
        assert list(answer) == ["question_id", "selected_options", "custom_text"]
        assert isinstance(answer["selected_options"], list)
        assert isinstance(answer["custom_text"], str)


def test_r12_rejection_payload_has_an_empty_answers_array_not_a_missing_key() -> None:
    resolution = Resolution(
        pending_id="p1",
        status=REJECTED,
        answers=(),
        rejected=True,
        reject_reason="",
        responded_at=datetime(2026, 1, 1, tzinfo=UTC),
        claimed=False,
    )
    text = json.dumps(wire.resolution_json(resolution))
    assert '"answers": []' in text
    assert '"reject_reason": ""' in text
    assert '"responded_at": "2026-01-01T00:00:00Z"' in text


@given(_moments)
def test_timestamps_are_rfc3339_utc_and_parse_back_to_the_same_instant(moment: datetime) -> None:
    text = wire.format_timestamp(moment)
    assert text.endswith("Z")
    assert datetime.fromisoformat(text.replace("Z", "+00:00")) == moment


def test_timestamps_in_other_zones_are_rendered_in_utc() -> None:
    moment = datetime(2026, 1, 1, 2, 0, 0, 500000, tzinfo=UTC) + timedelta(0)
    assert wire.format_timestamp(moment) == "2026-01-01T02:00:00.5Z"


def test_l4a_listed_bundle_emits_every_field_with_empty_defaults() -> None:
    created = datetime(2026, 1, 1, tzinfo=UTC)
    bundle = ListedBundle(
        pending_id="p",
        task_id="t",
        session_id="s",
        created_at=created,
        context="",
        questions=(
            ListedQuestion(question_id="q1", title="", prompt="", status="pending", options=()),
            ListedQuestion(
                question_id="q2",
                title="T",
                prompt="P",
                status="answered",
                options=(Option(option_id="o", label="", description=""),),
            ),
        ),
    )
    raw = wire.list_json(ListPage(bundles=(bundle,), has_more=False), created - timedelta(5))
    assert raw["count"] == 1
    assert raw["next_cursor"] == ""
    listed = raw["bundles"][0]
    assert listed["age_seconds"] == 0  # D7: a future created_at floors at 0
    assert listed["questions"][0] == {
        "question_id": "q1",
        "title": "",
        "prompt": "",
        "status": "pending",
        "options": [],
    }
    assert listed["questions"][1]["options"] == [{"option_id": "o", "label": "", "description": ""}]


def test_l11_empty_page_is_an_empty_envelope() -> None:
    raw = wire.list_json(ListPage(bundles=(), has_more=False), datetime.now(UTC))
    assert raw == {"bundles": [], "count": 0, "next_cursor": ""}


def test_outcome_parsing_accepts_answers_and_rejections() -> None:
    outcome = wire.parse_outcome(
        {"answers": [{"question_id": "q1", "selected_options": ["a"], "custom_text": " x "}]}
    )
    assert outcome.answers == (Answer("q1", ("a",), " x "),)
    assert not outcome.rejected
    rejection = wire.parse_outcome({"rejected": True, "reject_reason": "no"})
    assert rejection.rejected
    assert rejection.reject_reason == "no"
    assert wire.parse_outcome({}).answers == ()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"answers": [{"question_id": 5}]}, "answers[0].question_id"),
        ({"answers": [{"question_id": "q", "extra": 1}]}, "answers[0].extra"),
        (
            {"answers": [{"question_id": "q", "selected_options": ["a", 3]}]},
            "answers[0].selected_options[1]",
        ),
        ({"answers": "q1"}, "answers"),
        ({"rejected": "yes"}, "rejected"),
        ({"rejected": 1}, "rejected"),
        ({"reason": "old spelling"}, "reason"),
        # Read from cattrs' structured exceptions, not its message text: a key holding the
        # message's own separators still names itself whole.
        ({"answers": [{"question_id": "q", "x, y @ $.z": 1}]}, "answers[0].x, y @ $.z"),
        ([], "body"),
        (None, "body"),
    ],
)
def test_outcome_parsing_names_the_offending_field(payload: object, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        wire.parse_outcome(payload)
    assert caught.value.field == field


def test_question_drafts_keep_absent_ids_absent_so_the_domain_assigns_them() -> None:
    drafts = wire.parse_question_drafts(
        [
            {
                "prompt": "Which?",
                "options": [
                    {"label": "A", "description": "a"},
                    {"label": "B", "description": "b", "option_id": "b"},
                ],
            }
        ]
    )
    assert drafts[0].id is None
    assert drafts[0].options[0].option_id is None
    assert drafts[0].options[1].option_id == "b"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ("not a list", "questions"),
        ([5], "questions[0]"),
        ([{"prompt": 1}], "questions[0].prompt"),
        ([{"prompt": "p", "options": [{"label": 2}]}], "questions[0].options[0].label"),
        ([{"prompt": "p", "bogus": True}], "questions[0].bogus"),
    ],
)
def test_question_drafts_parsing_names_the_offending_field(payload: object, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        wire.parse_question_drafts(payload)
    assert caught.value.field == field
