"""An outbox entry's relation to the event it follows from, as data (issue #32):
``notification_outbox.origin_key``, the idempotency key of that event ("" for an event).

Until this revision the relation lived only in the keys' prefixes: a delivery, reminder,
escalation, deadline or terminal update of an event is keyed ``<event key>:<route>:<event>…``.
Entries stored before it get their origin parsed from their key here, with this revision's
own copy of the event-key format (``<event>:<pending id>``, a resolution's followed by
``:<claim time>``, 23 characters, ``%Y%m%dT%H%M%S.%fZ``), so later changes to the live code
never change what this revision did.

Revision ID: 0017_outbox_origins
Revises: 0016_closed_history
"""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa
from alembic import op

revision = "0017_outbox_origins"
down_revision: str | None = "0016_closed_history"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None

# The events recorded with their transitions as of this revision, and the width of the claim
# time in a resolution's key.
_EVENTS: Final = ("answerable", "resolved", "expired", "cancelled", "superseded")
_CLAIM_TIME_WIDTH: Final = 23
_BATCH: Final = 500

outbox = sa.table(
    "notification_outbox",
    sa.column("id", sa.Text),
    sa.column("pending_id", sa.Text),
    sa.column("route_id", sa.Text),
    sa.column("idempotency_key", sa.Text),
    sa.column("origin_key", sa.Text),
)


def origin_of(key: str, pending_id: str) -> str:
    """The key of the event that the entry keyed ``key`` follows from ("" when ``key`` does
    not begin with one of ``pending_id``'s event keys and a colon)."""
    for event in _EVENTS:
        head = f"{event}:{pending_id}"
        if event == "resolved":
            head = key[: len(head) + 1 + _CLAIM_TIME_WIDTH]
            if not head.startswith(f"{event}:{pending_id}:"):
                continue
        if key.startswith(f"{head}:"):
            return head
    return ""


def upgrade() -> None:
    op.add_column(
        "notification_outbox",
        sa.Column("origin_key", sa.Text, nullable=False, server_default=sa.text("''")),
    )
    connection = op.get_bind()
    after = ""
    while True:
        rows = connection.execute(
            sa.select(outbox.c.id, outbox.c.pending_id, outbox.c.idempotency_key)
            .where(outbox.c.route_id != "", outbox.c.id > after)
            .order_by(outbox.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        origins = [
            {"entry_id": row.id, "origin": origin}
            for row in rows
            if (origin := origin_of(row.idempotency_key, row.pending_id))
        ]
        if origins:
            connection.execute(
                sa.update(outbox)
                .where(outbox.c.id == sa.bindparam("entry_id"))
                .values(origin_key=sa.bindparam("origin")),
                origins,
            )
        after = rows[-1].id


def downgrade() -> None:
    op.drop_column("notification_outbox", "origin_key")
