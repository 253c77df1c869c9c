"""The audit chain's head follows its records on SQLite (issue #34): a trigger moves
``audit_heads`` whenever a record is inserted into ``audit_chain``, so a claim appends its
record in ONE statement (``INSERT … SELECT`` linking to the head, the hash computed by the
``clarion_link_hash`` function every connection registers) instead of three. The head only
moves forward: a record inserted behind it (by hand) leaves it alone.

PostgreSQL already appends in one statement (a data-modifying ``WITH``), so there this
revision changes nothing.

Revision ID: 0020_audit_head_trigger
Revises: 0019_audit_chain
"""

from __future__ import annotations

from alembic import op

revision = "0020_audit_head_trigger"
down_revision: str | None = "0019_audit_chain"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

_TRIGGER = """
CREATE TRIGGER audit_chain_moves_head AFTER INSERT ON audit_chain
BEGIN
    INSERT INTO audit_heads (scope, seq, prev_hash, hash)
    VALUES (NEW.scope, NEW.seq, NEW.prev_hash, NEW.hash)
    ON CONFLICT (scope) DO UPDATE
    SET seq = excluded.seq, prev_hash = excluded.prev_hash, hash = excluded.hash
    WHERE excluded.seq > audit_heads.seq;
END
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(_TRIGGER)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER audit_chain_moves_head")
