"""Who resolved a bundle (issue #20): ``task_session_messages.resolver_id``, ``resolver_kind``,
``resolver_name`` and ``resolver_surface``, written by the claim's own conditional UPDATE, and
the partial index over resolved clarification rows by (resolution time, pending id) that the
resolved list and the audit export walk newest first.

Existing rows keep NULL: who resolved them was never recorded, and they read as "unknown"
(their time is still their claim's ``updated_at``, so they are listed and exported).

Revision ID: 0005_resolved_by
Revises: 0004_bundle_asker
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.columns import Key
from clarion.adapters.sql.migrations.frozen.messages import MESSAGES, kind_columns
from clarion.adapters.sql.migrations.frozen.metadata import is_clarification, is_resolved

revision = "0005_resolved_by"
down_revision: str | None = "0004_bundle_asker"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

message = sa.table(MESSAGES, *kind_columns())


def upgrade() -> None:
    op.add_column("task_session_messages", sa.Column("resolver_id", Key, nullable=True))
    for name in ("resolver_kind", "resolver_name", "resolver_surface"):
        op.add_column("task_session_messages", sa.Column(name, sa.Text, nullable=True))
    resolved_rows = sa.and_(is_clarification(message), is_resolved(message))
    op.create_index(
        "ix_task_session_messages_resolved_order",
        "task_session_messages",
        ["updated_at", "bundle_pending_id"],
        sqlite_where=resolved_rows,
        postgresql_where=resolved_rows,
    )


def downgrade() -> None:
    op.drop_index("ix_task_session_messages_resolved_order", "task_session_messages")
    with op.batch_alter_table("task_session_messages") as batch:
        for name in ("resolver_surface", "resolver_name", "resolver_kind", "resolver_id"):
            batch.drop_column(name)
