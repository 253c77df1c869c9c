"""Issue #35: whether an agent's ask still waits for its outcome — the rule ``tasks/get``, a
retry and the hand-over of earlier outcomes read, and the in-memory ask records filter by."""

from __future__ import annotations

from typing import Any

import pytest

from clarion.domain import ANSWERED, CANCELLED, EXPIRED, PENDING, REJECTED, Option, Question
from clarion.domain.asks import still_waiting
from clarion.domain.history import SessionFacts
from clarion.domain.rows import ClarificationRow, parse_row
from tests.strategies import BASE_TIME, clarification_record

Q1 = Question(id="q1", prompt="One?", options=(Option("q1_opt1", "A", "a"),))
Q2 = Question(id="q2", prompt="Two?", options=(Option("q2_opt1", "B", "b"),))
RUNNING = SessionFacts(terminal=False, state_changed_at=BASE_TIME, next_turn_started_at=None)
ENDED = SessionFacts(terminal=True, state_changed_at=BASE_TIME, next_turn_started_at=None)
SUPERSEDED = SessionFacts(
    terminal=False, state_changed_at=BASE_TIME, next_turn_started_at=BASE_TIME
)


def rows(*statuses: str, **extra: Any) -> list[ClarificationRow]:
    return [
        parse_row(clarification_record(q, index=i, total=2, extra={"status": s, **extra}))
        for i, (q, s) in enumerate(zip((Q1, Q2), statuses, strict=False))
    ]


@pytest.mark.parametrize(
    ("bundle", "facts", "waits"),
    [
        (rows(PENDING, PENDING), RUNNING, True),
        (rows(PENDING, PENDING, agent_disconnected=True), RUNNING, True),  # detached: open
        (rows(ANSWERED, ANSWERED, response_delivery_pending=True), ENDED, True),  # in delivery
        (rows(PENDING, PENDING), None, True),  # no facts read: nothing closed it
        (rows(ANSWERED, ANSWERED), RUNNING, False),
        (rows(REJECTED, REJECTED), SUPERSEDED, False),
        (rows(ANSWERED, PENDING), RUNNING, False),  # a winner settles it
        (rows(CANCELLED, CANCELLED), RUNNING, False),
        (rows(EXPIRED, PENDING), RUNNING, False),
        (rows(PENDING, PENDING), SUPERSEDED, False),
        (rows(PENDING, PENDING), ENDED, False),
        (rows("unknown", "unknown"), RUNNING, False),  # neither pending nor closed: not open
        ([], RUNNING, False),  # gone
    ],
)
def test_an_ask_waits_while_its_bundle_is_open_or_being_delivered(
    bundle: list[ClarificationRow], facts: SessionFacts | None, waits: bool
) -> None:
    assert still_waiting(bundle, facts) is waits
