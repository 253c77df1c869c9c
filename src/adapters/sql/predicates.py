"""D4's conjuncts and the malformed-bundle guard, each written once (spec L2a).

The claim, restore, expire and detach statements, the list query, the workflow guard and the
pending-action projection all build their ``WHERE`` clauses from these functions, so a change
to activeness cannot leave one consumer behind. They take the message table (or an alias of
it) whose rows they judge; subqueries correlate to it.

Upstream facts §1.6 names which consumer applies which conjunct; ``is_active_row`` takes the
session-state conjunct as a flag for the consumers that skip it (guard, detach, expire).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from clarion.adapters.sql.metadata_sql import (
    MessageFrom,
    const,
    is_clarification,
    is_delivery_pending,
    is_detached,
    is_pendingish,
    pending_id_of,
)
from clarion.adapters.sql.schema import messages, task_session_turns, task_sessions
from clarion.domain.model import CLARIFICATION_REQUEST, SessionState

__all__ = [
    "bundle_is_well_formed",
    "current_turn_id",
    "in_live_session",
    "is_active_row",
    "is_clarification",
    "is_delivery_pending",
    "is_detached",
    "is_pendingish",
    "on_current_turn",
    "pending_id_of",
    "session_is_live",
]


def current_turn_id(session_id: ColumnElement[str]) -> ColumnElement[str]:
    """The session's current turn: newest by ``started_at``, ``created_at``, ``id`` (every
    turn is authoritative in Clarion). One backwards probe of ``ix_task_session_turns_current``.
    """
    turn = task_session_turns.alias()
    return (
        sa.select(turn.c.id)
        .where(turn.c.task_session_id == session_id)
        .order_by(turn.c.started_at.desc(), turn.c.created_at.desc(), turn.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )


def on_current_turn(m: MessageFrom) -> ColumnElement[bool]:
    """The row lies on its session's current turn (older turns are superseded history)."""
    return m.c.turn_id == current_turn_id(m.c.task_session_id)


def session_is_live(session: sa.FromClause) -> ColumnElement[bool]:
    """The session state is not COMPLETED, FAILED or CANCELLED."""
    terminal = [const(state) for state in sorted(SessionState.TERMINAL)]
    return session.c.state.not_in(terminal)


def in_live_session(m: MessageFrom) -> ColumnElement[bool]:
    """The row's session exists and is not terminal (:func:`session_is_live` on the row's
    session, probed by primary key)."""
    session = task_sessions.alias()
    return sa.exists().where(session.c.id == m.c.task_session_id, session_is_live(session))


def is_active_row(m: MessageFrom, *, require_live_session: bool = True) -> ColumnElement[bool]:
    """D4 for one row: a pending-ish clarification row on its session's current turn, and —
    unless ``require_live_session`` is False (guard, detach, expire) — a non-terminal session.
    Mirrors :func:`clarion.domain.activeness.row_is_active`."""
    terms = [is_clarification(m), is_pendingish(m), on_current_turn(m)]
    if require_live_session:
        terms.append(in_live_session(m))
    return sa.and_(*terms)


def bundle_is_well_formed(
    m: MessageFrom, key: ColumnElement[str] | None = None
) -> ColumnElement[bool]:
    """The claim's malformed-bundle guard, judged from one of the bundle's rows: no message
    carrying the same ``pending_id`` (of any type, §4.5) is a non-clarification row or lies on
    another session or turn. Mirrors :func:`clarion.domain.activeness.bundle_is_well_formed`.

    ``key`` is ``m``'s pending id when the caller already has it as a column (a list walk's
    ``bundle_pending_id``, see :func:`clarion.adapters.sql.visibility.bundle_key`); by default
    it is read from ``m``'s metadata."""
    other = messages.alias()
    return ~sa.exists().where(
        pending_id_of(other) == (pending_id_of(m) if key is None else key),
        sa.or_(
            other.c.type != const(CLARIFICATION_REQUEST),
            other.c.task_session_id != m.c.task_session_id,
            other.c.turn_id != m.c.turn_id,
        ),
    )
