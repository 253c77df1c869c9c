"""Two more bundle keys on clarification rows (issue 15): ``bundle_task_id`` (M5 from the rows:
the smallest non-empty row task id, "" when none has one) and ``bundle_complete`` (L16: every
row of the bundle has a question id), so the list walk judges both from the head row instead of
probing the bundle's rows (and, for L16, decoding their JSON) once per head.

Existing rows are backfilled with the function the repositories use when they insert
(``records.bundle_keys``), one pending id at a time, like 0003.

Revision ID: 0010_bundle_facts
Revises: 0009_slack
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

from clarion.adapters.sql.metadata_sql import is_clarification, pending_id_of
from clarion.adapters.sql.records import bundle_keys, message_record
from clarion.adapters.sql.types import Key, UtcDateTime
from clarion.domain.rows import MessageRecord

revision = "0010_bundle_facts"
down_revision: str | None = "0009_slack"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

BATCH = 5_000

message = sa.table(
    "task_session_messages",
    sa.column("id", Key),
    sa.column("task_session_id", Key),
    sa.column("task_id", Key),
    sa.column("turn_id", Key),
    sa.column("author_type", sa.Text),
    sa.column("content", sa.Text),
    sa.column("type", sa.Text),
    sa.column("metadata", sa.JSON().with_variant(JSONB(), "postgresql")),
    sa.column("created_at", UtcDateTime),
    sa.column("updated_at", UtcDateTime),
    sa.column("bundle_task_id", Key),
    sa.column("bundle_complete", sa.Boolean),
)


def _backfill(connection: sa.Connection) -> None:
    """Stream clarification rows grouped by pending id; write each group's two new keys."""
    pending_id = pending_id_of(message)
    rows = connection.execute(
        sa.select(message, pending_id.label("bundle_key"))
        .where(is_clarification(message), pending_id.is_not(None))
        .order_by(pending_id, message.c.id)
        .execution_options(yield_per=BATCH)
    ).mappings()
    update = (
        sa.update(message)
        .where(message.c.id == sa.bindparam("row_id"))
        .values(
            bundle_task_id=sa.bindparam("new_task_id", type_=Key),
            bundle_complete=sa.bindparam("new_complete", type_=sa.Boolean()),
        )
    )
    changes: list[dict[str, Any]] = []

    def add(group: list[MessageRecord]) -> None:
        keys = bundle_keys(group)
        for record in group:
            key = record.metadata.get("pending_id")
            if isinstance(key, str) and key in keys:
                changes.append(
                    {
                        "row_id": record.id,
                        "new_task_id": keys[key].task_id,
                        "new_complete": keys[key].complete,
                    }
                )

    group: list[MessageRecord] = []
    current: str | None = None
    for row in rows:
        if row["bundle_key"] != current:
            add(group)
            group, current = [], row["bundle_key"]
        group.append(message_record(row))
    add(group)
    # Written after the read has finished, in batches.
    for start in range(0, len(changes), BATCH):
        connection.execute(update, changes[start : start + BATCH])


def upgrade() -> None:
    op.add_column("task_session_messages", sa.Column("bundle_task_id", Key, nullable=True))
    op.add_column("task_session_messages", sa.Column("bundle_complete", sa.Boolean, nullable=True))
    _backfill(op.get_bind())


def downgrade() -> None:
    with op.batch_alter_table("task_session_messages") as batch:
        batch.drop_column("bundle_complete")
        batch.drop_column("bundle_task_id")
