"""Credentials say what they are: ``access_tokens.kind`` and ``access_tokens.parent_id``.

Browser login sessions used to be told apart from personal access tokens by their name
(``session:<SHA-256 of the parent token>``), so a token *named* ``session:…`` never
authenticated. Sessions are now marked by ``kind = 'session'`` and point at their token by
``parent_id``. Existing rows: a row whose name is ``session:`` followed by the hash of a stored
token is a session (it gets the new columns and an empty name); every other row — a token
someone named ``session:…`` included — is a personal access token.

Revision ID: 0002_token_kind
Revises: 0001_initial
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from clarion.adapters.sql.migrations.frozen.columns import EMPTY, PAT_KIND_DEFAULT, Key

revision = "0002_token_kind"
down_revision: str | None = "0001_initial"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

_OLD_SESSION_PREFIX = "session:"


def upgrade() -> None:
    op.add_column(
        "access_tokens",
        sa.Column("kind", sa.Text, nullable=False, server_default=PAT_KIND_DEFAULT),
    )
    op.add_column(
        "access_tokens",
        sa.Column("parent_id", Key, nullable=False, server_default=EMPTY),
    )
    tokens = sa.table(
        "access_tokens",
        sa.column("id", Key),
        sa.column("name", sa.Text),
        sa.column("token_hash", sa.Text),
        sa.column("kind", sa.Text),
        sa.column("parent_id", Key),
    )
    parent = tokens.alias("parent")
    named_hash = sa.func.substr(tokens.c.name, len(_OLD_SESSION_PREFIX) + 1)
    parent_id = sa.select(parent.c.id).where(parent.c.token_hash == named_hash).scalar_subquery()
    op.execute(
        sa.update(tokens)
        .where(
            tokens.c.name.startswith(_OLD_SESSION_PREFIX, autoescape=True),
            sa.exists().where(parent.c.token_hash == named_hash),
        )
        .values(kind="session", parent_id=parent_id, name="")
    )


def downgrade() -> None:
    tokens = sa.table(
        "access_tokens",
        sa.column("id", Key),
        sa.column("name", sa.Text),
        sa.column("token_hash", sa.Text),
        sa.column("kind", sa.Text),
        sa.column("parent_id", Key),
    )
    parent = tokens.alias("parent")
    parent_hash = (
        sa.select(parent.c.token_hash).where(parent.c.id == tokens.c.parent_id).scalar_subquery()
    )
    op.execute(
        sa.update(tokens)
        .where(tokens.c.kind == "session")
        .values(name=sa.literal(_OLD_SESSION_PREFIX) + sa.func.coalesce(parent_hash, ""))
    )
    op.drop_column("access_tokens", "parent_id")
    op.drop_column("access_tokens", "kind")
