"""The initial schema: workspaces, tasks, sessions, turns, messages, users, access tokens.

Revision ID: 0001_initial
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

from clarion.adapters.sql.migrations.frozen.columns import EMPTY, Key, UtcDateTime
from clarion.adapters.sql.migrations.frozen.messages import MESSAGES, kind_columns
from clarion.adapters.sql.migrations.frozen.metadata import (
    is_clarification,
    is_pendingish,
    pending_id_of,
)

revision = "0001_initial"
down_revision: str | None = None
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_table(
        "workspaces",
        sa.Column("id", Key, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("owner_id", Key, nullable=False, server_default=EMPTY),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_workspaces"),
    )
    op.create_table(
        "tasks",
        sa.Column("id", Key, nullable=False),
        sa.Column("workspace_id", Key, nullable=False, server_default=EMPTY),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tasks"),
    )
    op.create_index("ix_tasks_workspace_id", "tasks", ["workspace_id"])
    op.create_table(
        "task_sessions",
        sa.Column("id", Key, nullable=False),
        sa.Column("task_id", Key, nullable=False),
        sa.Column("state", sa.Text, nullable=False, server_default="CREATED"),
        sa.Column("is_primary", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("agent_token_hash", sa.Text, nullable=False, server_default=EMPTY),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_task_sessions"),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.id"],
            name="fk_task_sessions_task_id_tasks",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_task_sessions_task_id", "task_sessions", ["task_id"])
    op.create_table(
        "task_session_turns",
        sa.Column("id", Key, nullable=False),
        sa.Column("task_session_id", Key, nullable=False),
        sa.Column("task_id", Key, nullable=False, server_default=EMPTY),
        sa.Column("started_at", UtcDateTime, nullable=False),
        sa.Column("completed_at", UtcDateTime, nullable=True),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_task_session_turns"),
        sa.ForeignKeyConstraint(
            ["task_session_id"],
            ["task_sessions.id"],
            name="fk_task_session_turns_task_session_id_task_sessions",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_task_session_turns_current",
        "task_session_turns",
        ["task_session_id", "started_at", "created_at", "id"],
    )
    op.create_table(
        "task_session_messages",
        sa.Column("id", Key, nullable=False),
        sa.Column("task_session_id", Key, nullable=False),
        sa.Column("task_id", Key, nullable=False, server_default=EMPTY),
        sa.Column("turn_id", Key, nullable=False),
        sa.Column("author_type", sa.Text, nullable=False, server_default="user"),
        sa.Column("content", sa.Text, nullable=False, server_default=EMPTY),
        sa.Column("type", sa.Text, nullable=False, server_default="message"),
        sa.Column("metadata", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_task_session_messages"),
        sa.ForeignKeyConstraint(
            ["task_session_id"],
            ["task_sessions.id"],
            name="fk_task_session_messages_task_session_id_task_sessions",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["turn_id"],
            ["task_session_turns.id"],
            name="fk_task_session_messages_turn_id_task_session_turns",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_task_session_messages_session_created",
        "task_session_messages",
        ["task_session_id", "created_at"],
    )
    op.create_index("ix_task_session_messages_turn_id", "task_session_messages", ["turn_id"])
    # The expression and partial indexes are written with the same functions the queries use,
    # because both databases match an index only against the identical expression.
    message = sa.table(MESSAGES, *kind_columns())
    op.create_index(
        "ix_task_session_messages_pending_id", "task_session_messages", [pending_id_of(message)]
    )
    pending_rows = sa.and_(is_clarification(message), is_pendingish(message))
    op.create_index(
        "ix_task_session_messages_pending_rows",
        "task_session_messages",
        ["task_session_id", "turn_id"],
        sqlite_where=pending_rows,
        postgresql_where=pending_rows,
    )
    op.create_table(
        "users",
        sa.Column("id", Key, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("is_admin", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
    )
    op.create_table(
        "access_tokens",
        sa.Column("id", Key, nullable=False),
        sa.Column("user_id", Key, nullable=False),
        sa.Column("name", sa.Text, nullable=False, server_default=EMPTY),
        sa.Column("token_hash", sa.Text, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("expires_at", UtcDateTime, nullable=True),
        sa.Column("revoked_at", UtcDateTime, nullable=True),
        sa.Column("last_used_at", UtcDateTime, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_access_tokens"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_access_tokens_user_id_users", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("token_hash", name="uq_access_tokens_token_hash"),
    )
    op.create_index("ix_access_tokens_user_id", "access_tokens", ["user_id"])


def downgrade() -> None:
    for table in (
        "access_tokens",
        "users",
        "task_session_messages",
        "task_session_turns",
        "task_sessions",
        "tasks",
        "workspaces",
    ):
        op.drop_table(table)
