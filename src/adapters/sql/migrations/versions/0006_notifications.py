"""Notifications (issue #17): ``notification_routes`` and the durable ``notification_outbox``
the claim repository writes in the same transaction as the transition that causes an event.

Revision ID: 0006_notifications
Revises: 0004_bundle_asker
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

from clarion.adapters.sql.migrations.frozen.columns import EMPTY, Key, UtcDateTime

revision = "0006_notifications"
down_revision: str | None = "0005_resolved_by"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

ZERO = sa.text("0")


def upgrade() -> None:
    op.create_table(
        "notification_routes",
        sa.Column("id", Key, nullable=False),
        sa.Column("workspace_id", Key, nullable=False, server_default=EMPTY),
        sa.Column("channel", sa.Text, nullable=False),
        sa.Column("user_id", Key, nullable=False, server_default=EMPTY),
        sa.Column("created_by", Key, nullable=False, server_default=EMPTY),
        sa.Column("events", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("remind_after_s", sa.Float, nullable=True),
        sa.Column("escalate_after_s", sa.Float, nullable=True),
        sa.Column("escalate_to", Key, nullable=False, server_default=EMPTY),
        sa.Column("deadline_after_s", sa.Float, nullable=True),
        sa.Column("on_deadline", sa.Text, nullable=False),
        sa.Column("include_answers", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_notification_routes"),
    )
    op.create_index("ix_notification_routes_workspace_id", "notification_routes", ["workspace_id"])
    op.create_table(
        "notification_outbox",
        sa.Column("id", Key, nullable=False),
        sa.Column("pending_id", Key, nullable=False),
        sa.Column("event", sa.Text, nullable=False),
        sa.Column("route_id", Key, nullable=False, server_default=EMPTY),
        sa.Column("sequence", sa.Integer, nullable=False, server_default=ZERO),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("due_at", UtcDateTime, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default=ZERO),
        sa.Column("idempotency_key", sa.Text, nullable=False),
        sa.Column("lease_token", sa.Text, nullable=False, server_default=EMPTY),
        sa.Column("locked_until", UtcDateTime, nullable=True),
        sa.Column("last_error", sa.Text, nullable=False, server_default=EMPTY),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_notification_outbox"),
        sa.UniqueConstraint("idempotency_key", name="uq_notification_outbox_idempotency_key"),
    )
    op.create_index(
        "ix_notification_outbox_status_due_at", "notification_outbox", ["status", "due_at"]
    )
    op.create_index("ix_notification_outbox_pending_id", "notification_outbox", ["pending_id"])


def downgrade() -> None:
    op.drop_table("notification_outbox")
    op.drop_table("notification_routes")
