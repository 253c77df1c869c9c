"""Bad stored data never crashes a reader on either database (spec L4a, L12, L15, R2b):
unparseable question metadata, non-object responses, unknown and non-string statuses."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.engine import Engine

from clarion.domain.listing import ListedBundle, ListQuery, Visibility
from clarion.domain.model import ANSWERED, PENDING, Answer
from clarion.domain.replay import replay_winner
from clarion.ports.testing import ContractWorld, row_metadata
from tests.integration.sql.support import sql_world

EVERYONE = ListQuery(visibility=Visibility.everything())


@pytest.fixture(name="world")
def fixture_world(engine: Engine) -> ContractWorld:
    return sql_world(engine)


def listed(world: ContractWorld, pending_id: str) -> ListedBundle | None:
    page = world.claims.list_active_bundles(EVERYONE)
    return next((b for b in page.bundles if b.pending_id == pending_id), None)


@pytest.mark.parametrize(
    "question",
    [
        "not an object",
        None,
        42,
        ["a", "list"],
        {"prompt": 7, "title": None, "options": "not a list"},
        {"prompt": "p", "options": ["text", 3, None, {"option_id": 5, "label": ["x"]}]},
    ],
)
def test_an_unparseable_question_is_listed_with_empty_fields_and_answerable_by_text(
    world: ContractWorld, question: Any
) -> None:
    """L15 and L4a: the question keeps its id; unreadable strings are "" and lists are []."""
    session = world.session()
    world.raw_row(session.id, row_metadata("p-1", question_id="q1", question=question))
    bundle = listed(world, "p-1")
    assert bundle is not None
    (only,) = bundle.questions
    assert only.question_id == "q1"
    assert only.status == PENDING
    assert all(isinstance(option.option_id, str) for option in only.options)
    if not isinstance(question, dict):
        assert (only.title, only.prompt, only.options) == ("", "", ())
    answer = {"q1": Answer(question_id="q1", custom_text="free text")}
    assert world.claims.complete_active_bundle("p-1", ANSWERED, answer).claimed


@pytest.mark.parametrize("response", ["yes", 3, None, ["q1_opt1"], {"selected_options": "x"}])
def test_a_non_object_or_odd_response_is_replayed_without_crashing(
    world: ContractWorld, response: Any
) -> None:
    """R2b: a stored response that is not an object contributes no answer entry."""
    session = world.session()
    world.raw_row(
        session.id, row_metadata("p-1", question_id="q1", status=ANSWERED, response=response)
    )
    bundle = world.bundle("p-1")
    (row,) = bundle.rows
    replay = replay_winner("p-1", bundle.rows)
    assert replay is not None
    assert replay.status == ANSWERED
    if isinstance(response, dict):
        assert row.response == Answer(question_id="q1", selected_options=(), custom_text="")
    else:
        assert row.response is None
        assert replay.answers == ()


@pytest.mark.parametrize(
    ("status", "shown"),
    [("weird", "weird"), (5, "5"), (True, "true"), ({"a": 1}, '{"a": 1}'), ("", PENDING)],
)
def test_unknown_statuses_show_verbatim_and_only_pending_rows_are_claimed(
    world: ContractWorld, status: Any, shown: str
) -> None:
    """L12, L4a, D3: a mixed bundle lists each row's status; an unknown status is not
    pending, so the claim transitions only the pending sibling (and "" counts as pending)."""
    session = world.session()
    world.raw_row(session.id, row_metadata("p-1", question_id="q1", index=0, status=status))
    world.raw_row(session.id, row_metadata("p-1", question_id="q2", index=1))
    bundle = listed(world, "p-1")
    assert bundle is not None
    assert [q.status for q in bundle.questions] == [shown, PENDING]
    answers = {
        qid: Answer(question_id=qid, selected_options=(f"{qid}_opt1",)) for qid in ("q1", "q2")
    }
    result = world.claims.complete_active_bundle("p-1", ANSWERED, answers)
    assert result.claimed
    expected = ["q1", "q2"] if shown == PENDING else ["q2"]
    assert [row.question_id for row in result.rows] == expected


def test_a_bundle_whose_only_rows_have_unknown_statuses_is_neither_listed_nor_claimed(
    world: ContractWorld,
) -> None:
    session = world.session()
    world.raw_row(session.id, row_metadata("p-1", question_id="q1", status="weird"))
    assert listed(world, "p-1") is None
    answer = {"q1": Answer(question_id="q1", custom_text="x")}
    assert not world.claims.complete_active_bundle("p-1", ANSWERED, answer).claimed


@pytest.mark.parametrize("index", ["first", None, 2.5, True, [1]])
def test_an_unreadable_question_index_orders_as_zero(world: ContractWorld, index: Any) -> None:
    """D2: a missing or unparseable question_index reads 0, then created_at and id decide."""
    session = world.session()
    world.raw_row(session.id, row_metadata("p-1", question_id="q1", index=1))
    world.raw_row(session.id, row_metadata("p-1", question_id="q2", index=index))
    bundle = listed(world, "p-1")
    assert bundle is not None
    first = "q1" if isinstance(index, float) and index > 1 else "q2"
    assert bundle.questions[0].question_id == first
