"""Who asked a bundle: ``task_session_messages.asker_id`` and ``asker_via`` on clarification
rows (issue #13: the asker is durable, so every replica recognises the asker's wait), with the
partial index over pending clarification rows by asker that the per-identity active-bundle
limit counts on (issue #14).

Existing rows keep NULL: who asked them was never stored (their scoped waits only watch, and
they count towards no identity's limit; the whole-server bound still counts them).

Revision ID: 0004_bundle_asker
Revises: 0003_bundle_keys
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.columns import Key
from clarion.adapters.sql.migrations.frozen.messages import MESSAGES, kind_columns
from clarion.adapters.sql.migrations.frozen.metadata import is_clarification, is_pendingish

revision = "0004_bundle_asker"
down_revision: str | None = "0003_bundle_keys"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

message = sa.table(MESSAGES, *kind_columns())


def upgrade() -> None:
    op.add_column("task_session_messages", sa.Column("asker_id", Key, nullable=True))
    op.add_column("task_session_messages", sa.Column("asker_via", sa.Text, nullable=True))
    pending_rows = sa.and_(is_clarification(message), is_pendingish(message))
    op.create_index(
        "ix_task_session_messages_pending_asker",
        "task_session_messages",
        ["asker_id", "bundle_pending_id"],
        sqlite_where=pending_rows,
        postgresql_where=pending_rows,
    )


def downgrade() -> None:
    op.drop_index("ix_task_session_messages_pending_asker", "task_session_messages")
    with op.batch_alter_table("task_session_messages") as batch:
        batch.drop_column("asker_via")
        batch.drop_column("asker_id")
