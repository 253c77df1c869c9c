"""The tamper-evident audit chain (issue #34): ``audit_chain``, one hash-linked record per
resolution and per restore, in one chain per workspace, and ``audit_heads``, each chain's last
position and hash (the row a claim locks to append).

Bundles resolved before this revision are backfilled here, in resolution order, with this
revision's own copy of the record and the link (``frozen/audit_chain_0019.py``): the chain
starts with the first resolution the database holds, not at the upgrade.

Revision ID: 0019_audit_chain
Revises: 0018_approvals
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.audit_chain_0019 import backfill
from clarion.adapters.sql.migrations.frozen.columns import Key
from clarion.adapters.sql.migrations.frozen.messages import MESSAGES, message_columns

revision = "0019_audit_chain"
down_revision: str | None = "0018_approvals"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

message = sa.table(
    MESSAGES,
    *message_columns(),
    sa.column("bundle_pending_id", Key),
    sa.column("asker_id", Key),
    sa.column("asker_via", sa.Text),
    sa.column("resolver_id", Key),
    sa.column("resolver_kind", sa.Text),
    sa.column("resolver_name", sa.Text),
    sa.column("resolver_surface", sa.Text),
)


def upgrade() -> None:
    op.create_table(
        "audit_chain",
        sa.Column("scope", Key, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column("pending_id", Key, nullable=False),
        sa.Column("prev_hash", sa.Text, nullable=False),
        sa.Column("hash", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("scope", "seq", name="pk_audit_chain"),
    )
    op.create_index("ix_audit_chain_pending_id", "audit_chain", ["pending_id", "seq"])
    op.create_table(
        "audit_heads",
        sa.Column("scope", Key, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("prev_hash", sa.Text, nullable=False),
        sa.Column("hash", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("scope", name="pk_audit_heads"),
    )
    backfill(op.get_bind(), message)


def downgrade() -> None:
    op.drop_table("audit_heads")
    op.drop_index("ix_audit_chain_pending_id", "audit_chain")
    op.drop_table("audit_chain")
