"""The outbox's purge reads only what it deletes (issue #35, tenth pass): an index on
``notification_outbox.created_at``. The notification worker purges finished entries older
than the retention on every round that finds little to do — every couple of seconds, on
every replica — and without the index each purge read the whole outbox, whose finished
entries are kept for days.

Revision ID: 0021_outbox_created_at
Revises: 0020_audit_head_trigger
"""

from __future__ import annotations

from alembic import op

revision = "0021_outbox_created_at"
down_revision: str | None = "0020_audit_head_trigger"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_index("ix_notification_outbox_created_at", "notification_outbox", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_notification_outbox_created_at", "notification_outbox")
