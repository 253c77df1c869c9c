"""D4 — the single membership rule — as pure functions over an in-memory view of the world.

A bundle is *active* iff at least one of its clarification rows has a pending-ish status, lies
on its session's current turn, and the session is not terminal. The in-memory repository uses
these functions directly; the SQL repository expresses the same rule as query predicates and
is tested against these functions (the oracle).

Every turn is authoritative in Clarion (no prompt-dispatch reservations), so the current turn
of a session is simply its newest turn by ``started_at``, ``created_at``, ``id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from clarion.domain.host import Session, Turn
from clarion.domain.model import CLARIFICATION_REQUEST, SessionState, is_terminal_state
from clarion.domain.rows import ClarificationRow, MessageRecord


def turn_order_key(turn: Turn) -> tuple[datetime, datetime, str]:
    return (turn.started_at, turn.created_at, turn.id)


def current_turn_id(turns: Iterable[Turn]) -> str | None:
    """The newest turn by ``started_at DESC, created_at DESC, id DESC``; None without turns."""
    newest = max(turns, key=turn_order_key, default=None)
    return newest.id if newest is not None else None


def row_is_active(
    row: ClarificationRow,
    session: Session | None,
    current_turn: str | None,
    *,
    require_live_session: bool = True,
) -> bool:
    """D4 for one row: pending-ish, on the current turn, and (optionally) a non-terminal session.

    ``require_live_session=False`` is the workflow-guard / detach / expire variant, which does
    not look at the session state (upstream facts §1.6).
    """
    if not row.is_pending or current_turn is None or row.turn_id != current_turn:
        return False
    if not require_live_session:
        return True
    return session is not None and not is_terminal_state(session.state)


def bundle_is_well_formed(pending_id: str, records: Iterable[MessageRecord]) -> bool:
    """The claim's malformed-bundle guard: every message carrying ``pending_id`` is a
    clarification row, and they all share one session and one turn."""
    sessions: set[str] = set()
    turns: set[str] = set()
    for record in records:
        if record.metadata.get("pending_id") != pending_id:
            continue
        if record.type != CLARIFICATION_REQUEST:
            return False
        sessions.add(record.session_id)
        turns.add(record.turn_id)
    return len(sessions) <= 1 and len(turns) <= 1


def pending_action_for_session(
    rows: Iterable[ClarificationRow], session: Session, current_turn: str | None
) -> str | None:
    """§4.11 per session: "clarification" when an active row exists on its current turn."""
    if is_terminal_state(session.state):
        return None
    if any(row_is_active(row, session, current_turn) for row in rows):
        return "clarification"
    return None


def task_pending_action(sessions: Iterable[Session], actions: Mapping[str, str]) -> str | None:
    """T1 task level: over input-capable sessions, "clarification" when any is blocked."""
    for session in sessions:
        if session.state in SessionState.INPUT_CAPABLE and actions.get(session.id):
            return actions[session.id]
    return None


def primary_session_pending_action(
    sessions: Iterable[Session], actions: Mapping[str, str]
) -> str | None:
    """T1 primary-session level: the primary input-capable session's action, else None."""
    for session in sessions:
        if session.is_primary and session.state in SessionState.INPUT_CAPABLE:
            return actions.get(session.id)
    return None
