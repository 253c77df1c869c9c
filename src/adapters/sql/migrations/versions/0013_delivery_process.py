"""Recovery in seconds on PostgreSQL (issue 28, item 4): ``task_session_messages.
delivery_process`` — the liveness lease of the serving process whose claim put the row in
delivery, written by the claim's own conditional UPDATE and cleared with the delivery marker —
and the partial index over rows still in delivery that recovery reads every few seconds.

Existing rows keep NULL: a delivery whose process was not recorded keeps the grace period.

Revision ID: 0013_delivery_process
Revises: 0012_agent_asks
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.messages import MESSAGES, kind_columns
from clarion.adapters.sql.migrations.frozen.metadata import is_clarification, is_delivery_pending

revision = "0013_delivery_process"
down_revision: str | None = "0012_agent_asks"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

message = sa.table(MESSAGES, *kind_columns())


def upgrade() -> None:
    op.add_column("task_session_messages", sa.Column("delivery_process", sa.Text, nullable=True))
    in_delivery = sa.and_(is_clarification(message), is_delivery_pending(message))
    op.create_index(
        "ix_task_session_messages_in_delivery",
        "task_session_messages",
        ["updated_at"],
        sqlite_where=in_delivery,
        postgresql_where=in_delivery,
    )


def downgrade() -> None:
    op.drop_index("ix_task_session_messages_in_delivery", "task_session_messages")
    with op.batch_alter_table("task_session_messages") as batch:
        batch.drop_column("delivery_process")
