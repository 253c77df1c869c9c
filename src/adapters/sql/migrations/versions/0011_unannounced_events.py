"""Notification events ride on the rows of the transition that causes them (issue 15):
``task_session_messages.unannounced_events`` (one bit per event, NULL when none) and the
partial index the notification store finds marked rows by. The claim then records its
``resolved`` event in its own conditional UPDATE instead of inserting an outbox row in a second
statement (see ``clarion.adapters.sql.outbox``).

Nothing is backfilled: every event recorded before this revision is already in
``notification_outbox``.

Revision ID: 0011_unannounced_events
Revises: 0010_bundle_facts
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_unannounced_events"
down_revision: str | None = "0010_bundle_facts"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

_MARKED = sa.text("unannounced_events IS NOT NULL")


def upgrade() -> None:
    op.add_column(
        "task_session_messages", sa.Column("unannounced_events", sa.Integer, nullable=True)
    )
    op.create_index(
        "ix_task_session_messages_unannounced",
        "task_session_messages",
        ["bundle_pending_id"],
        sqlite_where=_MARKED,
        postgresql_where=_MARKED,
    )


def downgrade() -> None:
    """Events still on their rows are lost with the column: take them into the outbox first
    (any ``claim_due``; the notification worker does it every round)."""
    op.drop_index("ix_task_session_messages_unannounced", "task_session_messages")
    with op.batch_alter_table("task_session_messages") as batch:
        batch.drop_column("unannounced_events")
