"""Two more bundle keys on clarification rows (issue 15): ``bundle_task_id`` (M5 from the rows:
the smallest non-empty row task id, "" when none has one) and ``bundle_complete`` (L16: every
row of the bundle has a question id), so the list walk judges both from the head row instead of
probing the bundle's rows (and, for L16, decoding their JSON) once per head.

Existing rows are backfilled with the function the repositories used when they inserted
(``records.bundle_keys``, as frozen in ``migrations/frozen/bundles.py``), one pending id at a
time, like 0003.

Revision ID: 0010_bundle_facts
Revises: 0009_slack
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.bundles import bundles_of, execute_in_batches
from clarion.adapters.sql.migrations.frozen.columns import Key
from clarion.adapters.sql.migrations.frozen.messages import MESSAGES, message_columns

revision = "0010_bundle_facts"
down_revision: str | None = "0009_slack"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

BATCH = 5_000

message = sa.table(
    MESSAGES,
    *message_columns(),
    sa.column("bundle_task_id", Key),
    sa.column("bundle_complete", sa.Boolean),
)


def _backfill(connection: sa.Connection) -> None:
    """Every keyed clarification row gets its bundle's two new keys, written after the read."""
    update = (
        sa.update(message)
        .where(message.c.id == sa.bindparam("row_id"))
        .values(
            bundle_task_id=sa.bindparam("new_task_id", type_=Key),
            bundle_complete=sa.bindparam("new_complete", type_=sa.Boolean()),
        )
    )
    changes = [
        {"row_id": record.id, "new_task_id": keys.task_id, "new_complete": keys.complete}
        for bundle in bundles_of(connection, message, BATCH)
        for record, keys in bundle
    ]
    execute_in_batches(connection, update, changes, BATCH)


def upgrade() -> None:
    op.add_column("task_session_messages", sa.Column("bundle_task_id", Key, nullable=True))
    op.add_column("task_session_messages", sa.Column("bundle_complete", sa.Boolean, nullable=True))
    _backfill(op.get_bind())


def downgrade() -> None:
    with op.batch_alter_table("task_session_messages") as batch:
        batch.drop_column("bundle_complete")
        batch.drop_column("bundle_task_id")
