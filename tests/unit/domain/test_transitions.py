"""The transitions' metadata changes, written once for both adapters (issue #16)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from clarion.domain.errors import ClaimError
from clarion.domain.model import ANSWERED, CANCELLED, PENDING, REJECTED, Answer, Question
from clarion.domain.rows import ASKED_BY_REQUEST, Asker, parse_row
from clarion.domain.transitions import (
    DELIVERY_PENDING,
    DETACHED,
    claimed,
    claimed_answer,
    delivered,
    detached,
    ended,
    is_exact_claim,
    new_bundle_records,
    restored,
)

ANSWER = Answer(question_id="q1", selected_options=("q1_opt1",), custom_text="because")
BASE = {"pending_id": "p", "question_id": "q1", "status": PENDING, DETACHED: True}


def test_the_claim_writes_status_marker_and_the_response_only_when_answered() -> None:
    answered = claimed(BASE, ANSWERED, ANSWER)
    assert answered["status"] == ANSWERED
    assert answered[DELIVERY_PENDING] is True
    assert answered["response"] == {
        "question_id": "q1",
        "selected_options": ["q1_opt1"],
        "custom_text": "because",
    }
    rejected = claimed(BASE, REJECTED, None)
    assert "response" not in rejected
    assert BASE["status"] == PENDING, "the input is never changed"


def test_a_claimed_row_needs_a_question_id_and_when_answered_a_response() -> None:
    assert claimed_answer("m1", "q1", ANSWERED, {"q1": ANSWER}) == ANSWER
    assert claimed_answer("m1", "q1", REJECTED, None) is None
    with pytest.raises(ClaimError, match="missing question_id"):
        claimed_answer("m1", "", REJECTED, None)
    with pytest.raises(ClaimError, match="missing response"):
        claimed_answer("m1", "q1", ANSWERED, {"q2": ANSWER})


def test_finalize_restore_end_and_detach() -> None:
    claimed_row = claimed(BASE, ANSWERED, ANSWER)
    assert delivered(claimed_row) == {k: v for k, v in claimed_row.items() if k != DELIVERY_PENDING}
    assert restored(claimed_row) == BASE, "back to pending; agent_disconnected kept"
    fresh = {k: v for k, v in BASE.items() if k != DETACHED}
    assert ended(CANCELLED)(fresh) == {**fresh, "status": CANCELLED, DETACHED: True}
    assert detached(fresh) == BASE


def test_new_bundle_records_are_one_pending_row_per_question_in_order() -> None:
    ids = (f"m{n}" for n in itertools.count(1))
    stamps = (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=n) for n in itertools.count())
    asker = Asker("alice", ASKED_BY_REQUEST)
    questions = (Question(id="a", prompt="A?"), Question(id="b", prompt="B?"))
    records = new_bundle_records(
        pending_id="p",
        session_id="s",
        task_id="t",
        turn_id="u",
        questions=questions,
        context="ctx",
        asker=asker,
        new_id=lambda: next(ids),
        now=lambda: next(stamps),
    )
    rows = [parse_row(record) for record in records]
    assert [(r.id, r.question_id, r.question_index, r.status) for r in rows] == [
        ("m1", "a", 0, PENDING),
        ("m2", "b", 1, PENDING),
    ]
    assert [record.content for record in records] == ["A?", "B?"]
    assert rows[0].created_at < rows[1].created_at
    assert all(r.asker == asker and r.context == "ctx" for r in rows)
    marked = [attrs.evolve(row, status=ANSWERED) for row in rows]
    assert is_exact_claim(["m2", "m1"], marked, ANSWERED)
    assert not is_exact_claim(["m1", "m1", "m2"], marked, ANSWERED)
    assert not is_exact_claim(["m1"], marked, ANSWERED)
    assert not is_exact_claim(["m1", "m2"], marked, REJECTED)
    assert not is_exact_claim([], [], ANSWERED)
