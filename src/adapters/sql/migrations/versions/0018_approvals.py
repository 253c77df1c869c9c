"""Approvals (issue #33): what is kept beside a bundle's rows — ``bundle_extras`` (an
approval's terms, or a plain question's assignment), ``bundle_candidates``, ``approval_votes``
— and ``groups``, ``group_members`` and ``standing_approvals``. New tables only: no existing
row changes, and a bundle without extras reads exactly as before.

Revision ID: 0018_approvals
Revises: 0017_outbox_origins
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.columns import EMPTY, Key, UtcDateTime

revision = "0018_approvals"
down_revision: str | None = "0017_outbox_origins"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None


def _bundle_tables() -> None:
    op.create_table(
        "bundle_extras",
        sa.Column("pending_id", Key, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("action_name", sa.Text, nullable=False, server_default=EMPTY),
        sa.Column("action_json", sa.Text, nullable=False, server_default=EMPTY),
        sa.Column("action_digest", sa.Text, nullable=False, server_default=EMPTY),
        sa.Column("reason", sa.Text, nullable=False, server_default=EMPTY),
        sa.Column("required_approvals", sa.Integer, nullable=False, server_default=sa.text("0")),
        sa.Column("standing_id", Key, nullable=True),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("pending_id", name="pk_bundle_extras"),
    )
    op.create_table(
        "bundle_candidates",
        sa.Column("pending_id", Key, nullable=False),
        sa.Column("subject_kind", sa.Text, nullable=False),
        sa.Column("subject_id", Key, nullable=False),
        sa.PrimaryKeyConstraint(
            "pending_id", "subject_kind", "subject_id", name="pk_bundle_candidates"
        ),
    )
    op.create_index(
        "ix_bundle_candidates_subject", "bundle_candidates", ["subject_kind", "subject_id"]
    )
    op.create_table(
        "approval_votes",
        sa.Column("pending_id", Key, nullable=False),
        sa.Column("voter_id", Key, nullable=False),
        sa.Column("display_name", sa.Text, nullable=False),
        sa.Column("decision", sa.Text, nullable=False),
        sa.Column("comment", sa.Text, nullable=False),
        sa.Column("surface", sa.Text, nullable=False),
        sa.Column("voted_at", UtcDateTime, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("pending_id", "voter_id", name="pk_approval_votes"),
    )


def _directory_tables() -> None:
    op.create_table(
        "groups",
        sa.Column("id", Key, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("name_key", sa.Text, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_groups"),
    )
    op.create_index("ux_groups_name_key", "groups", ["name_key"], unique=True)
    op.create_table(
        "group_members",
        sa.Column("group_id", Key, nullable=False),
        sa.Column("user_id", Key, nullable=False),
        sa.PrimaryKeyConstraint("group_id", "user_id", name="pk_group_members"),
    )
    op.create_index("ix_group_members_user_id", "group_members", ["user_id"])
    op.create_table(
        "standing_approvals",
        sa.Column("id", Key, nullable=False),
        sa.Column("workspace_id", Key, nullable=False),
        sa.Column("action_name", sa.Text, nullable=False),
        sa.Column("constraints_json", sa.Text, nullable=False),
        sa.Column("granted_by_id", Key, nullable=False),
        sa.Column("granted_by_name", sa.Text, nullable=False),
        sa.Column("granted_at", UtcDateTime, nullable=False),
        sa.Column("expires_at", UtcDateTime, nullable=False),
        sa.Column("source_pending_id", Key, nullable=False),
        sa.Column("revoked_at", UtcDateTime, nullable=True),
        sa.Column("revoked_by_id", Key, nullable=False, server_default=EMPTY),
        sa.PrimaryKeyConstraint("id", name="pk_standing_approvals"),
    )
    op.create_index(
        "ix_standing_approvals_match",
        "standing_approvals",
        ["workspace_id", "action_name", "expires_at"],
    )


def upgrade() -> None:
    _bundle_tables()
    _directory_tables()


def downgrade() -> None:
    op.drop_index("ix_standing_approvals_match", "standing_approvals")
    op.drop_table("standing_approvals")
    op.drop_index("ix_group_members_user_id", "group_members")
    op.drop_table("group_members")
    op.drop_index("ux_groups_name_key", "groups")
    op.drop_table("groups")
    op.drop_table("approval_votes")
    op.drop_index("ix_bundle_candidates_subject", "bundle_candidates")
    op.drop_table("bundle_candidates")
    op.drop_table("bundle_extras")
