"""The history's closed bundles (issue #30): the indexes its walks read newest first —
expired and cancelled clarification rows by (closing time, pending id), turns by start (a
newer turn closes the pending bundles of the one before it, with no write: facts §4.4), and
ended sessions by their state change.

Revision ID: 0016_closed_history
Revises: 0015_agents_workspace
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.messages import MESSAGES, kind_columns
from clarion.adapters.sql.migrations.frozen.metadata import (
    TERMINAL_SESSION_STATES,
    const,
    is_clarification,
    is_ended,
)

revision = "0016_closed_history"
down_revision: str | None = "0015_agents_workspace"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

message = sa.table(MESSAGES, *kind_columns())
session = sa.table("task_sessions", sa.column("state", sa.Text))


def upgrade() -> None:
    ended_rows = sa.and_(is_clarification(message), is_ended(message))
    op.create_index(
        "ix_task_session_messages_ended_order",
        "task_session_messages",
        ["updated_at", "bundle_pending_id"],
        sqlite_where=ended_rows,
        postgresql_where=ended_rows,
    )
    op.create_index("ix_task_session_turns_started", "task_session_turns", ["started_at"])
    ended_sessions = session.c.state.in_([const(s) for s in TERMINAL_SESSION_STATES])
    op.create_index(
        "ix_task_sessions_ended",
        "task_sessions",
        ["updated_at"],
        sqlite_where=ended_sessions,
        postgresql_where=ended_sessions,
    )


def downgrade() -> None:
    op.drop_index("ix_task_sessions_ended", "task_sessions")
    op.drop_index("ix_task_session_turns_started", "task_session_turns")
    op.drop_index("ix_task_session_messages_ended_order", "task_session_messages")
