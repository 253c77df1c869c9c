"""Used signed answer links (issue #17): ``answer_link_uses``, one row per link that answered,
keyed by the link's nonce so a link answers at most once across processes.

Revision ID: 0007_answer_links
Revises: 0004_bundle_asker
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.columns import Key, UtcDateTime

revision = "0007_answer_links"
down_revision: str | None = "0006_notifications"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_table(
        "answer_link_uses",
        sa.Column("link_id", Key, nullable=False),
        sa.Column("pending_id", Key, nullable=False),
        sa.Column("user_id", Key, nullable=False),
        sa.Column("used_at", UtcDateTime, nullable=False),
        sa.Column("expires_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("link_id", name="pk_answer_link_uses"),
    )
    op.create_index("ix_answer_link_uses_expires_at", "answer_link_uses", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_answer_link_uses_expires_at", "answer_link_uses")
    op.drop_table("answer_link_uses")
