"""Reading durable rows: parse_row, D1, D2, M5 and the one question-id reader."""

from __future__ import annotations

import math
from datetime import timedelta
from random import Random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clarion.domain import (
    ANSWERED,
    CLARIFICATION_REQUEST,
    PENDING,
    Answer,
    Bundle,
    ClarificationRow,
    MessageRecord,
    Option,
    Question,
    bundle_questions,
    clarification_metadata,
    make_bundle,
    order_rows,
    parse_row,
    question_id_from_metadata,
    resolve_task_id,
    response_metadata,
)
from tests.strategies import BASE_TIME, clarification_record, identifiers, questions

QUESTION = Question(
    id="q1",
    prompt="Deploy now?",
    title="Deploy",
    options=(Option("yes", "Yes", "ship it"), Option("no", "No", "wait")),
)


def record(metadata: dict[str, Any], **fields: Any) -> MessageRecord:
    values: dict[str, Any] = {
        "id": "m1",
        "session_id": "s1",
        "task_id": "t1",
        "turn_id": "turn1",
        "type": CLARIFICATION_REQUEST,
        "metadata": metadata,
        "created_at": BASE_TIME,
        "updated_at": BASE_TIME,
    }
    values.update(fields)
    return MessageRecord(**values)


def test_a_created_row_reads_back_its_question_and_fields() -> None:
    metadata = clarification_metadata(
        pending_id="p1", question=QUESTION, index=2, total=3, context="ctx"
    )
    row = parse_row(record(metadata))
    assert row.pending_id == "p1"
    assert row.question_id == "q1"
    assert row.question == QUESTION
    assert row.question_index == 2
    assert row.status == PENDING
    assert row.response is None
    assert row.context == "ctx"
    assert (row.session_id, row.task_id, row.turn_id) == ("s1", "t1", "turn1")
    assert row.detached is False
    assert row.delivery_pending is False
    assert row.is_pending is True
    assert row.is_resolved is False


@given(questions(), st.integers(0, 3))
def test_clarification_metadata_round_trips_through_parse_row(
    question: Question, index: int
) -> None:
    metadata = clarification_metadata(
        pending_id="p", question=question, index=index, total=4, context=""
    )
    row = parse_row(record(metadata))
    assert row.question == question
    assert row.question_index == index


def test_a_stored_response_reads_back_as_the_answer() -> None:
    answer = Answer("q1", ("yes", "no"), "text")
    row = parse_row(record({"question_id": "q1", "response": response_metadata(answer)}))
    assert row.response == answer


# question_id_from_metadata: flat first, then nested (fixes upstream §9.13).
@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"question_id": "flat", "question": {"id": "nested"}}, "flat"),
        ({"question": {"id": "nested"}}, "nested"),
        ({"question_id": "", "question": {"id": "nested"}}, "nested"),
        ({"question_id": 7, "question": {"id": "nested"}}, "nested"),
        ({"question_id": None, "question": {"id": "nested"}}, "nested"),
        ({"question": {"id": 3}}, ""),
        ({"question": {"id": ""}}, ""),
        ({"question": "q1"}, ""),
        ({"question": ["q1"]}, ""),
        ({}, ""),
    ],
)
def test_question_id_is_flat_then_nested(metadata: dict[str, Any], expected: str) -> None:
    assert question_id_from_metadata(metadata) == expected
    assert parse_row(record(metadata)).question_id == expected


def test_the_parsed_question_carries_the_resolved_id() -> None:
    row = parse_row(record({"question_id": "flat", "question": {"id": "nested", "prompt": "p"}}))
    assert row.question == Question(id="flat", prompt="p")


@pytest.mark.parametrize("raw", [None, "text", 3, ["a"], True])
def test_an_unparseable_question_reads_as_none(raw: Any) -> None:
    metadata = {"question_id": "q1"} if raw is None else {"question_id": "q1", "question": raw}
    assert parse_row(record(metadata)).question is None


def test_options_that_are_not_objects_are_skipped_and_missing_fields_are_empty() -> None:
    raw = {
        "prompt": 5,
        "title": None,
        "options": ["x", 1, None, {"option_id": "a", "label": "A"}, {"label": ["L"]}],
    }
    question = parse_row(record({"question_id": "q1", "question": raw})).question
    assert question == Question(
        id="q1", prompt="", title="", options=(Option("a", "A", ""), Option("", "", ""))
    )


@pytest.mark.parametrize("options", [None, "abc", {"option_id": "a"}, 3])
def test_options_that_are_not_a_list_read_as_none(options: Any) -> None:
    question = parse_row(record({"question_id": "q1", "question": {"options": options}})).question
    assert question is not None
    assert question.options == ()


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("answered", "answered"),
        ("", ""),
        ("weird", "weird"),
        (None, None),
        (5, "5"),
        (True, "true"),
        ([1], "[1]"),
    ],
)
def test_status_is_read_raw_with_non_strings_as_json_text(
    stored: Any, expected: str | None
) -> None:
    assert parse_row(record({"question_id": "q1", "status": stored})).status == expected


def test_an_absent_status_reads_as_none_and_counts_as_pending() -> None:
    row = parse_row(record({"question_id": "q1"}))
    assert row.status is None
    assert row.is_pending is True
    assert row.display_status == PENDING


@pytest.mark.parametrize(
    ("status", "pending", "resolved", "display"),
    [
        (None, True, False, "pending"),
        ("", True, False, "pending"),
        ("pending", True, False, "pending"),
        ("answered", False, True, "answered"),
        ("rejected", False, True, "rejected"),
        ("expired", False, False, "expired"),
        ("cancelled", False, False, "cancelled"),
        ("responding", False, False, "responding"),
        ("5", False, False, "5"),
    ],
)
def test_d3_status_classification(
    status: str | None, pending: bool, resolved: bool, display: str
) -> None:
    metadata: dict[str, Any] = {"question_id": "q1"}
    if status is not None:
        metadata["status"] = status
    row = parse_row(record(metadata))
    assert (row.is_pending, row.is_resolved, row.display_status) == (pending, resolved, display)


@pytest.mark.parametrize(
    ("flag", "expected"), [(True, True), ("true", True), ("1", True), (1, True)]
)
def test_truthy_flags_are_recognised(flag: Any, expected: bool) -> None:
    row = parse_row(
        record({"question_id": "q1", "agent_disconnected": flag, "response_delivery_pending": flag})
    )
    assert (row.detached, row.delivery_pending) == (expected, expected)


@pytest.mark.parametrize(
    "flag", [1.0, "yes", "True", "TRUE", False, 0, 2, "0", "false", "", None, [True], {}]
)
def test_other_values_are_not_truthy(flag: Any) -> None:
    row = parse_row(
        record({"question_id": "q1", "agent_disconnected": flag, "response_delivery_pending": flag})
    )
    assert (row.detached, row.delivery_pending) == (False, False)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (3, 3),
        (2.9, 2),
        (0, 0),
        (-1, -1),
        (True, 0),
        ("3", 0),
        (None, 0),
        (math.inf, 0),
        (math.nan, 0),
        ([1], 0),
    ],
)
def test_d2_question_index_is_numeric_else_zero(raw: Any, expected: int) -> None:
    assert parse_row(record({"question_id": "q1", "question_index": raw})).question_index == (
        expected
    )


def test_d2_a_missing_question_index_reads_as_zero() -> None:
    assert parse_row(record({"question_id": "q1"})).question_index == 0


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (
            {"selected_options": ["a", 1, None, "b"], "custom_text": "t"},
            Answer("q1", ("a", "b"), "t"),
        ),
        ({"selected_options": "a", "custom_text": 5}, Answer("q1")),
        ({}, Answer("q1")),
        ("a", None),
        (["a"], None),
        (None, None),
    ],
)
def test_stored_responses_degrade_gracefully(response: Any, expected: Answer | None) -> None:
    assert parse_row(record({"question_id": "q1", "response": response})).response == expected


def test_non_string_pending_id_and_context_read_as_empty() -> None:
    row = parse_row(record({"question_id": "q1", "pending_id": 12, "context": ["c"]}))
    assert (row.pending_id, row.context) == ("", "")


# D2: question_index, created_at, id — total even with duplicate or missing indexes.
@st.composite
def degraded_rows(draw: st.DrawFn) -> list[ClarificationRow]:
    ids = draw(st.lists(identifiers(), min_size=1, max_size=8, unique=True))
    rows = []
    for message_id in ids:
        metadata: dict[str, Any] = {"question_id": message_id}
        index = draw(st.one_of(st.none(), st.integers(0, 2), st.just("bad")))
        if index is not None:
            metadata["question_index"] = index
        created = BASE_TIME + timedelta(seconds=draw(st.integers(0, 2)))
        rows.append(parse_row(record(metadata, id=message_id, created_at=created)))
    return rows


@settings(max_examples=100)
@given(degraded_rows(), st.randoms(use_true_random=False))
def test_d2_every_permutation_sorts_to_the_same_order(
    rows: list[ClarificationRow], random: Random
) -> None:
    shuffled = list(rows)
    random.shuffle(shuffled)
    ordered = order_rows(rows)
    assert order_rows(shuffled) == ordered
    keys = [(r.question_index, r.created_at, r.id) for r in ordered]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_d2_duplicate_indexes_fall_back_to_created_at_then_id() -> None:
    later = parse_row(record({"question_id": "a"}, id="m0", created_at=BASE_TIME + timedelta(1)))
    same_time_b = parse_row(record({"question_id": "b"}, id="m2"))
    same_time_a = parse_row(record({"question_id": "c"}, id="m1"))
    first = parse_row(record({"question_id": "d", "question_index": -1}, id="m9"))
    ordered = order_rows([later, same_time_b, same_time_a, first])
    assert [r.id for r in ordered] == ["m9", "m1", "m2", "m0"]


def test_order_rows_returns_a_new_tuple_and_leaves_the_input_alone() -> None:
    rows = [
        parse_row(clarification_record(QUESTION, index=1, total=2, message_id="b")),
        parse_row(clarification_record(QUESTION, index=0, total=2, message_id="a")),
    ]
    before = list(rows)
    assert [r.id for r in order_rows(rows)] == ["a", "b"]
    assert rows == before


def test_bundle_questions_follow_d2_and_keep_the_id_of_an_unparseable_question() -> None:
    q2 = Question(id="q2", prompt="Second?")
    rows = [
        parse_row(clarification_record(q2, index=1, total=2)),
        parse_row(clarification_record(QUESTION, index=0, total=2, extra={"question": "garbage"})),
    ]
    assert bundle_questions(rows) == (Question(id="q1"), q2)


def _row(
    message_id: str, *, task_id: str = "t1", seconds: int = 0, **meta: Any
) -> ClarificationRow:
    metadata: dict[str, Any] = {"question_id": message_id, "pending_id": "p"} | meta
    return parse_row(
        record(
            metadata,
            id=message_id,
            task_id=task_id,
            created_at=BASE_TIME + timedelta(seconds=seconds),
        )
    )


def test_d1_bundle_created_at_is_the_minimum_row_created_at() -> None:
    bundle = make_bundle(
        "p", [_row("a", seconds=5), _row("b", seconds=-3), _row("c", seconds=1)], "t1"
    )
    assert bundle.created_at == BASE_TIME - timedelta(seconds=3)


def test_make_bundle_holds_rows_in_d2_order() -> None:
    rows = [_row("a", question_index=2), _row("b", question_index=0), _row("c", question_index=1)]
    bundle = make_bundle("p", rows, None)
    assert [r.id for r in bundle.rows] == ["b", "c", "a"]
    assert [q.id for q in bundle.questions] == ["b", "c", "a"]
    assert bundle.pending_id == "p"
    assert bundle.session_id == "s1"


def test_bundle_context_is_the_earliest_rows_context() -> None:
    rows = [
        _row("b", seconds=0, context="second by id", question_index=0),
        _row("a", seconds=0, context="first", question_index=1),
        _row("c", seconds=-1, context="earliest", question_index=2),
    ]
    assert make_bundle("p", rows, None).context == "earliest"
    assert make_bundle("p", rows[:2], None).context == "first"


def test_an_empty_bundle_has_no_session_and_no_context() -> None:
    bundle = Bundle(pending_id="p", rows=(), session_task_id=None)
    assert (bundle.session_id, bundle.context, bundle.task_id) == ("", "", "")


# M5 / M5a.
def test_m5_task_id_comes_from_the_rows() -> None:
    assert make_bundle("p", [_row("a"), _row("b")], "session-task").task_id == "t1"


def test_m5_rows_disagreeing_on_task_id_take_the_smallest_non_empty() -> None:
    rows = [_row("a", task_id=""), _row("b", task_id="t9"), _row("c", task_id="t3")]
    assert make_bundle("p", rows, "session-task").task_id == "t3"


def test_m5_rows_without_task_id_fall_back_to_the_session_row() -> None:
    rows = [_row("a", task_id=""), _row("b", task_id="")]
    assert make_bundle("p", rows, "session-task").task_id == "session-task"


@pytest.mark.parametrize("session_task_id", [None, ""])
def test_m5a_no_task_id_anywhere_resolves_to_empty(session_task_id: str | None) -> None:
    assert make_bundle("p", [_row("a", task_id="")], session_task_id).task_id == ""


def test_resolve_task_id_is_the_same_rule_for_every_reader() -> None:
    assert resolve_task_id(["", "b", "a"], "s") == "a"
    assert resolve_task_id([], "s") == "s"
    assert resolve_task_id(["", ""], None) == ""


def test_response_metadata_always_writes_every_key() -> None:
    assert response_metadata(Answer("q1")) == {
        "question_id": "q1",
        "selected_options": [],
        "custom_text": "",
    }


def test_a_row_with_an_answered_status_and_response_is_resolved() -> None:
    row = _row("a", status=ANSWERED, response={"custom_text": "ok"})
    assert row.is_resolved is True
    assert row.response == Answer("a", (), "ok")
