"""One agents workspace per owner, enforced by the database (issue #29 S6):
``workspaces.agents_owner`` — the owner id of the owner's agents workspace ("" for the unowned
one), NULL on every other workspace — under a unique index, so ``/mcp/agent`` finds the
caller's workspace by that key (no scan of the caller's workspaces) and two processes cannot
create two.

Backfill: the workspace ``/mcp/agent`` used until now — per owner, the oldest workspace named
"Agents" — becomes that owner's agents workspace. Any younger duplicate (two processes racing
before this revision) stays an ordinary workspace with its tasks.

Revision ID: 0015_agents_workspace
Revises: 0014_route_secrets
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.columns import Key

revision = "0015_agents_workspace"
down_revision: str | None = "0014_route_secrets"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

_BACKFILL = sa.text(
    """
    UPDATE workspaces SET agents_owner = owner_id
    WHERE name = 'Agents' AND id = (
        SELECT oldest.id FROM workspaces AS oldest
        WHERE oldest.name = 'Agents' AND oldest.owner_id = workspaces.owner_id
        ORDER BY oldest.created_at, oldest.id
        LIMIT 1
    )
    """
)


def upgrade() -> None:
    op.add_column("workspaces", sa.Column("agents_owner", Key, nullable=True))
    op.execute(_BACKFILL)
    op.create_index("ix_workspaces_agents_owner", "workspaces", ["agents_owner"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_workspaces_agents_owner", "workspaces")
    with op.batch_alter_table("workspaces") as batch:
        batch.drop_column("agents_owner")
