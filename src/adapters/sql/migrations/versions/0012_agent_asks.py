"""Agent asks (issue #28): ``agent_asks``, one row per MCP ask pointing at its bundle, so an
agent's retry, its MCP task and its late answer find the ask again in any process.

Revision ID: 0012_agent_asks
Revises: 0011_unannounced_events
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.columns import Key, UtcDateTime

revision = "0012_agent_asks"
down_revision: str | None = "0011_unannounced_events"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

_OPEN_ASK = sa.text("state = 'open'")


def upgrade() -> None:
    op.create_table(
        "agent_asks",
        sa.Column("id", Key, nullable=False),
        sa.Column("owner", Key, nullable=False),
        sa.Column("scope", Key, nullable=False),
        sa.Column("retry_key", Key, nullable=False),
        sa.Column("pending_id", Key, nullable=False),
        sa.Column("session_id", Key, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("as_task", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_agent_asks"),
    )
    op.create_index(
        "ux_agent_asks_open_key",
        "agent_asks",
        ["owner", "scope", "retry_key"],
        unique=True,
        sqlite_where=_OPEN_ASK,
        postgresql_where=_OPEN_ASK,
    )
    op.create_index(
        "ix_agent_asks_owner_scope", "agent_asks", ["owner", "scope", "state", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_agent_asks_owner_scope", "agent_asks")
    op.drop_index("ux_agent_asks_open_key", "agent_asks")
    op.drop_table("agent_asks")
