"""Bundle keys on clarification rows: D1 ``bundle_created_at``, ``bundle_pending_id`` and
``bundle_digest``, with the partial index the list walk reads, and the digest added to the
per-session index of pending rows for create's deduplication (issue 15).

Existing rows are backfilled with the function the repositories used when they inserted
(``records.bundle_keys``, as frozen in ``migrations/frozen/bundles.py``), one pending id at a
time, so every clarification row — pending or history — carries its bundle's keys afterwards.

Revision ID: 0003_bundle_keys
Revises: 0002_token_kind
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.bundles import bundles_of, execute_in_batches
from clarion.adapters.sql.migrations.frozen.columns import Key, UtcDateTime
from clarion.adapters.sql.migrations.frozen.messages import MESSAGES, message_columns
from clarion.adapters.sql.migrations.frozen.metadata import (
    is_clarification,
    is_pendingish,
)

revision = "0003_bundle_keys"
down_revision: str | None = "0002_token_kind"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

BATCH = 5_000

message = sa.table(
    MESSAGES,
    *message_columns(),
    sa.column("bundle_created_at", UtcDateTime),
    sa.column("bundle_pending_id", Key),
    sa.column("bundle_digest", sa.Text),
)


def _backfill(connection: sa.Connection) -> None:
    """Every keyed clarification row gets its bundle's keys, written after the read."""
    update = (
        sa.update(message)
        .where(message.c.id == sa.bindparam("row_id"))
        .values(
            bundle_created_at=sa.bindparam("new_created_at", type_=UtcDateTime()),
            bundle_pending_id=sa.bindparam("new_pending_id", type_=Key),
            bundle_digest=sa.bindparam("new_digest", type_=sa.Text()),
        )
    )
    changes = [
        {
            "row_id": record.id,
            "new_created_at": keys.created_at,
            "new_pending_id": keys.pending_id,
            "new_digest": keys.digest,
        }
        for bundle in bundles_of(connection, message, BATCH)
        for record, keys in bundle
    ]
    execute_in_batches(connection, update, changes, BATCH)


def upgrade() -> None:
    op.add_column(
        "task_session_messages", sa.Column("bundle_created_at", UtcDateTime, nullable=True)
    )
    op.add_column("task_session_messages", sa.Column("bundle_pending_id", Key, nullable=True))
    op.add_column("task_session_messages", sa.Column("bundle_digest", sa.Text, nullable=True))
    _backfill(op.get_bind())
    pending_rows = sa.and_(is_clarification(message), is_pendingish(message))
    op.create_index(
        "ix_task_session_messages_pending_order",
        "task_session_messages",
        ["bundle_created_at", "bundle_pending_id"],
        sqlite_where=pending_rows,
        postgresql_where=pending_rows,
    )
    # The digest joins the per-session index of pending rows rather than getting its own:
    # every claim takes a row out of each partial index, so fewer is cheaper.
    op.drop_index("ix_task_session_messages_pending_rows", "task_session_messages")
    op.create_index(
        "ix_task_session_messages_pending_rows",
        "task_session_messages",
        ["task_session_id", "turn_id", "bundle_digest"],
        sqlite_where=pending_rows,
        postgresql_where=pending_rows,
    )


def downgrade() -> None:
    pending_rows = sa.and_(is_clarification(message), is_pendingish(message))
    op.drop_index("ix_task_session_messages_pending_rows", "task_session_messages")
    op.create_index(
        "ix_task_session_messages_pending_rows",
        "task_session_messages",
        ["task_session_id", "turn_id"],
        sqlite_where=pending_rows,
        postgresql_where=pending_rows,
    )
    op.drop_index("ix_task_session_messages_pending_order", "task_session_messages")
    with op.batch_alter_table("task_session_messages") as batch:
        batch.drop_column("bundle_digest")
        batch.drop_column("bundle_pending_id")
        batch.drop_column("bundle_created_at")
