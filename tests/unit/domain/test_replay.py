"""R2/R2b: what a losing caller is told, reconstructed from re-read rows."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clarion.domain import (
    ANSWERED,
    CANCELLED,
    EXPIRED,
    PENDING,
    REJECTED,
    Answer,
    ClarificationRow,
    Option,
    Question,
    Resolution,
    normalize_outcome,
    parse_row,
    replay_winner,
    response_metadata,
)
from clarion.domain.model import resolution_status
from tests.strategies import BASE_TIME, clarification_record, question_sets, valid_outcomes

Q1 = Question(id="q1", prompt="One?", options=(Option("q1_opt1", "A", "a"),))
Q2 = Question(id="q2", prompt="Two?", options=(Option("q2_opt1", "B", "b"),))
Q3 = Question(id="q3", prompt="Three?", options=(Option("q3_opt1", "C", "c"),))


def row(question: Question, index: int, **extra: Any) -> ClarificationRow:
    return parse_row(clarification_record(question, index=index, total=3, extra=extra))


def test_r2b_replayed_rejection_has_no_answers_and_an_empty_reason() -> None:
    rows = [row(q, i, status=REJECTED) for i, q in enumerate((Q1, Q2))]
    resolution = replay_winner("bundle-1", rows)
    assert resolution is not None
    assert resolution.status == REJECTED
    assert resolution.rejected is True
    assert resolution.answers == ()
    assert resolution.reject_reason == ""
    assert resolution.claimed is False


def test_r2b_replayed_answers_are_the_stored_responses_in_d2_order() -> None:
    rows = [
        row(q, i, status=ANSWERED, response={"selected_options": [q.options[0].option_id]})
        for i, q in enumerate((Q1, Q2, Q3))
    ]
    resolution = replay_winner("bundle-1", list(reversed(rows)))
    assert resolution == Resolution(
        pending_id="bundle-1",
        status=ANSWERED,
        answers=(
            Answer("q1", ("q1_opt1",)),
            Answer("q2", ("q2_opt1",)),
            Answer("q3", ("q3_opt1",)),
        ),
        rejected=False,
        reject_reason="",
        responded_at=BASE_TIME,
        claimed=False,
    )


def test_r2b_status_is_the_first_terminal_row_in_d2_order() -> None:
    # A legacy mixed bundle: D2 puts the rejected row (index 0) before the answered one.
    answered = row(Q2, 1, status=ANSWERED, response={"custom_text": "b"})
    rejected = row(Q1, 0, status=REJECTED)
    pending = row(Q3, 2, status=PENDING)
    resolution = replay_winner("bundle-1", [pending, answered, rejected])
    assert resolution is not None
    assert resolution.status == REJECTED
    assert resolution.rejected is True
    # Answers still walk every row with a stored response.
    assert resolution.answers == (Answer("q2", (), "b"),)


def test_r2b_rows_ahead_of_the_winner_that_are_not_terminal_are_passed_over() -> None:
    expired = row(Q1, 0, status=EXPIRED)
    answered = row(Q2, 1, status=ANSWERED, response={"custom_text": "yes"})
    resolution = replay_winner("bundle-1", [answered, expired])
    assert resolution is not None
    assert resolution.status == ANSWERED
    assert resolution.responded_at == answered.updated_at


def test_r2_no_winner_is_its_own_result() -> None:
    rows = [
        row(Q1, 0, status=PENDING),
        row(Q2, 1, status=CANCELLED),
        row(Q3, 2, status="responding"),
    ]
    assert replay_winner("bundle-1", rows) is None
    assert replay_winner("bundle-1", []) is None


def test_r2b_non_object_responses_are_skipped() -> None:
    rows = [
        row(Q1, 0, status=ANSWERED, response="q1_opt1"),
        row(Q2, 1, status=ANSWERED, response=["q2_opt1"]),
        row(Q3, 2, status=ANSWERED, response={"selected_options": ["q3_opt1"]}),
    ]
    resolution = replay_winner("bundle-1", rows)
    assert resolution is not None
    assert resolution.answers == (Answer("q3", ("q3_opt1",)),)


def test_r2b_responded_at_is_the_winning_rows_updated_at() -> None:
    stamp = BASE_TIME + timedelta(minutes=7, microseconds=3)
    first = parse_row(
        clarification_record(Q1, index=0, total=2, updated_at=stamp, extra={"status": REJECTED})
    )
    second = parse_row(
        clarification_record(
            Q2,
            index=1,
            total=2,
            updated_at=stamp + timedelta(seconds=1),
            extra={"status": REJECTED},
        )
    )
    resolution = replay_winner("bundle-1", [second, first])
    assert resolution is not None
    assert resolution.responded_at == stamp


def test_r2b_replayed_answer_takes_the_rows_question_id_not_the_stored_one() -> None:
    stored = {"question_id": "something-else", "selected_options": ["q1_opt1"]}
    resolution = replay_winner("bundle-1", [row(Q1, 0, status=ANSWERED, response=stored)])
    assert resolution is not None
    assert resolution.answers == (Answer("q1", ("q1_opt1",)),)


@settings(max_examples=60)
@given(st.data())
def test_r2b_a_loser_replays_exactly_the_winners_normalized_answers_whatever_the_row_order(
    data: st.DataObject,
) -> None:
    question_set = data.draw(question_sets())
    outcome = data.draw(valid_outcomes(question_set))
    status, normal = normalize_outcome(question_set, outcome)
    responses = {answer.question_id: answer for answer in normal.answers}
    # What the claim writes (P1a): status on every row, response on each answered row.
    claimed = [
        parse_row(
            clarification_record(
                q,
                index=i,
                total=len(question_set),
                extra={"status": status}
                | ({"response": response_metadata(responses[q.id])} if q.id in responses else {}),
            )
        )
        for i, q in enumerate(question_set)
    ]
    resolution = replay_winner("p", data.draw(st.permutations(claimed)))
    assert resolution is not None
    assert resolution.status == status
    assert resolution.answers == normal.answers
    assert resolution.rejected == normal.rejected
    assert resolution.reject_reason == ""


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (ANSWERED, "answered"),
        (REJECTED, "rejected"),
        (PENDING, None),
        (EXPIRED, None),
        (CANCELLED, None),
        ("", None),
        (None, None),
        ("Answered", None),
    ],
)
def test_d3_only_answered_and_rejected_are_a_resolutions_status(
    status: str | None, outcome: str | None
) -> None:
    """#32: ``Resolution.status`` is typed ``ResolutionStatus``; a stored status becomes one
    only when it is a terminal outcome."""
    assert resolution_status(status) == outcome
