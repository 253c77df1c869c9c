"""Keyset indexes for the host's paged lists (issue #14): workspaces and tasks by
``(created_at, id)``, and a workspace's tasks by ``(workspace_id, created_at, id)``, so a page
of any of them is one index walk from the cursor, whatever the number of rows.

Indexes only; no data changes.

Revision ID: 0008_list_keys
Revises: 0004_bundle_asker
"""

from __future__ import annotations

from alembic import op

revision = "0008_list_keys"
down_revision: str | None = "0007_answer_links"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None


def upgrade() -> None:
    op.create_index("ix_workspaces_created", "workspaces", ["created_at", "id"])
    op.create_index("ix_tasks_created", "tasks", ["created_at", "id"])
    op.create_index("ix_tasks_workspace_created", "tasks", ["workspace_id", "created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_tasks_workspace_created", "tasks")
    op.drop_index("ix_tasks_created", "tasks")
    op.drop_index("ix_workspaces_created", "workspaces")
