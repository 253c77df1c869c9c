"""Slack (issue #18): ``posted_messages``, every message a channel posted for a bundle (so its
terminal events update them in place), and ``chat_user_links``, the chat accounts (Slack user
ids) linked to Clarion users.

Revision ID: 0009_slack
Revises: 0008_list_keys
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.columns import Key, UtcDateTime

revision = "0009_slack"
down_revision: str | None = "0008_list_keys"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_table(
        "posted_messages",
        sa.Column("channel_kind", sa.Text, nullable=False),
        sa.Column("channel_id", sa.Text, nullable=False),
        sa.Column("message_id", sa.Text, nullable=False),
        sa.Column("pending_id", Key, nullable=False),
        sa.Column("route_id", Key, nullable=False),
        sa.Column("idempotency_key", sa.Text, nullable=False),
        sa.Column("posted_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint(
            "channel_kind", "channel_id", "message_id", name="pk_posted_messages"
        ),
    )
    op.create_index(
        "ix_posted_messages_pending_id", "posted_messages", ["pending_id", "channel_kind"]
    )
    op.create_index("ix_posted_messages_idempotency_key", "posted_messages", ["idempotency_key"])
    op.create_table(
        "chat_user_links",
        sa.Column("provider", sa.Text, nullable=False),
        sa.Column("external_id", sa.Text, nullable=False),
        sa.Column("user_id", Key, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("provider", "external_id", name="pk_chat_user_links"),
    )
    op.create_index("ix_chat_user_links_user_id", "chat_user_links", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_chat_user_links_user_id", "chat_user_links")
    op.drop_table("chat_user_links")
    op.drop_index("ix_posted_messages_idempotency_key", "posted_messages")
    op.drop_index("ix_posted_messages_pending_id", "posted_messages")
    op.drop_table("posted_messages")
