"""D4 activeness, the malformed-bundle guard and the §4.11/T1 pending-action projection."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from clarion.domain import (
    ANSWERED,
    CLARIFICATION_REQUEST,
    MessageRecord,
    Question,
    Session,
    SessionState,
    Turn,
    bundle_is_well_formed,
    current_turn_id,
    is_terminal_state,
    parse_row,
    pending_action_for_session,
    primary_session_pending_action,
    row_is_active,
    task_pending_action,
)
from clarion.domain.rows import ClarificationRow
from tests.strategies import BASE_TIME, clarification_record

QUESTION = Question(id="q1", prompt="Continue?")


def turn(turn_id: str, started: int, created: int = 0, session_id: str = "s1") -> Turn:
    return Turn(
        id=turn_id,
        session_id=session_id,
        started_at=BASE_TIME + timedelta(seconds=started),
        created_at=BASE_TIME + timedelta(seconds=created),
    )


def row(turn_id: str = "turn-1", **extra: Any) -> ClarificationRow:
    return parse_row(clarification_record(QUESTION, index=0, total=1, turn_id=turn_id, extra=extra))


def session(state: str = SessionState.RUNNING, session_id: str = "s1", **kw: Any) -> Session:
    return Session(id=session_id, task_id="t1", state=state, **kw)


def test_current_turn_is_the_newest_by_started_at() -> None:
    turns = [turn("b", started=5, created=0), turn("a", started=9, created=-10), turn("c", 1)]
    assert current_turn_id(turns) == "a"


def test_current_turn_ties_on_started_at_break_by_created_at() -> None:
    assert current_turn_id([turn("a", 5, created=2), turn("b", 5, created=1)]) == "a"


def test_current_turn_ties_on_both_timestamps_break_by_id() -> None:
    assert current_turn_id([turn("a", 5, 1), turn("c", 5, 1), turn("b", 5, 1)]) == "c"


def test_a_session_without_turns_has_no_current_turn() -> None:
    assert current_turn_id([]) is None


def test_completed_at_does_not_stop_a_turn_being_current() -> None:
    done = Turn(
        id="done",
        session_id="s1",
        started_at=BASE_TIME + timedelta(seconds=5),
        created_at=BASE_TIME,
        completed_at=BASE_TIME + timedelta(seconds=6),
    )
    assert current_turn_id([turn("older", 1), done]) == "done"


@pytest.mark.parametrize("status", [None, "", "pending"])
def test_d4_a_pendingish_row_on_the_current_turn_of_a_live_session_is_active(
    status: str | None,
) -> None:
    # None stands for a JSON null status, which reads like an absent one (D3).
    assert row_is_active(row(status=status), session(), "turn-1") is True


@pytest.mark.parametrize("status", ["answered", "rejected", "expired", "cancelled", "weird"])
def test_d4_a_row_with_any_other_status_is_not_active(status: str) -> None:
    assert row_is_active(row(status=status), session(), "turn-1") is False


def test_d4_a_row_on_a_superseded_turn_is_not_active() -> None:
    assert row_is_active(row(turn_id="turn-1"), session(), "turn-2") is False


def test_d4_a_row_of_a_session_without_turns_is_not_active() -> None:
    assert row_is_active(row(), session(), None) is False
    assert row_is_active(row(), session(), None, require_live_session=False) is False


@pytest.mark.parametrize("state", sorted(SessionState.TERMINAL))
def test_d4_a_row_of_a_terminal_session_is_not_active(state: str) -> None:
    assert row_is_active(row(), session(state), "turn-1") is False


@pytest.mark.parametrize("state", [s for s in SessionState.ALL if s not in SessionState.TERMINAL])
def test_d4_a_row_of_any_non_terminal_session_is_active(state: str) -> None:
    assert row_is_active(row(), session(state), "turn-1") is True


def test_d4_a_row_whose_session_is_missing_is_not_active() -> None:
    assert row_is_active(row(), None, "turn-1") is False


@pytest.mark.parametrize("state", sorted(SessionState.TERMINAL))
def test_the_guard_variant_ignores_the_session_state(state: str) -> None:
    assert row_is_active(row(), session(state), "turn-1", require_live_session=False) is True
    assert row_is_active(row(), None, "turn-1", require_live_session=False) is True


def test_the_guard_variant_still_needs_pendingish_status_and_current_turn() -> None:
    assert row_is_active(row(status=ANSWERED), None, "turn-1", require_live_session=False) is False
    assert row_is_active(row(), None, "turn-2", require_live_session=False) is False


def test_terminal_states_are_exactly_completed_failed_cancelled() -> None:
    assert {s for s in SessionState.ALL if is_terminal_state(s)} == {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
    }
    assert is_terminal_state("completed") is False


def message(
    message_id: str,
    *,
    pending_id: str = "p1",
    type_: str = CLARIFICATION_REQUEST,
    session_id: str = "s1",
    turn_id: str = "turn-1",
) -> MessageRecord:
    return MessageRecord(
        id=message_id,
        session_id=session_id,
        task_id="t1",
        turn_id=turn_id,
        type=type_,
        metadata={"pending_id": pending_id, "question_id": message_id},
        created_at=BASE_TIME,
        updated_at=BASE_TIME,
    )


def test_a_bundle_of_clarification_rows_on_one_session_and_turn_is_well_formed() -> None:
    records = [message("m1"), message("m2"), message("x", pending_id="other", session_id="s9")]
    assert bundle_is_well_formed("p1", records) is True


def test_a_bundle_with_no_rows_at_all_is_not_malformed() -> None:
    assert bundle_is_well_formed("p1", []) is True


@pytest.mark.parametrize(
    "intruder",
    [
        message("m2", type_="permission_request"),
        message("m2", session_id="s2"),
        message("m2", turn_id="turn-2"),
    ],
    ids=["other-type", "other-session", "other-turn"],
)
def test_a_bundle_spanning_types_sessions_or_turns_is_malformed(intruder: MessageRecord) -> None:
    assert bundle_is_well_formed("p1", [message("m1"), intruder]) is False


def test_a_session_with_an_active_row_projects_clarification() -> None:
    rows = [row(status=ANSWERED), row()]
    assert pending_action_for_session(rows, session(), "turn-1") == "clarification"


def test_a_session_without_active_rows_projects_nothing() -> None:
    assert pending_action_for_session([row(status=ANSWERED)], session(), "turn-1") is None
    assert pending_action_for_session([row()], session(), "turn-2") is None
    assert pending_action_for_session([], session(), "turn-1") is None


@pytest.mark.parametrize("state", sorted(SessionState.TERMINAL))
def test_a_terminal_session_projects_nothing(state: str) -> None:
    assert pending_action_for_session([row()], session(state), "turn-1") is None


def test_t1_task_action_comes_from_any_input_capable_session() -> None:
    sessions = [
        session(SessionState.IDLE, "idle"),
        session(SessionState.RUNNING, "quiet"),
        session(SessionState.WAITING_FOR_INPUT, "blocked"),
    ]
    actions = {"idle": "clarification", "blocked": "clarification"}
    assert task_pending_action(sessions, actions) == "clarification"


def test_t1_task_action_ignores_sessions_that_are_not_input_capable() -> None:
    sessions = [session(SessionState.IDLE, "idle"), session(SessionState.CREATED, "new")]
    assert task_pending_action(sessions, {"idle": "clarification", "new": "x"}) is None
    assert task_pending_action([], {}) is None


def test_t1_primary_session_action_is_the_primary_input_capable_sessions() -> None:
    sessions = [
        session(SessionState.RUNNING, "other", is_primary=False),
        session(SessionState.IDLE, "idle-primary", is_primary=True),
        session(SessionState.WAITING_FOR_INPUT, "primary", is_primary=True),
    ]
    actions = {"other": "clarification", "idle-primary": "clarification"}
    assert primary_session_pending_action(sessions, actions) is None
    assert primary_session_pending_action(sessions, actions | {"primary": "clarification"}) == (
        "clarification"
    )


def test_t1_no_primary_input_capable_session_means_no_primary_action() -> None:
    sessions = [session(SessionState.RUNNING, "s", is_primary=False)]
    assert primary_session_pending_action(sessions, {"s": "clarification"}) is None
