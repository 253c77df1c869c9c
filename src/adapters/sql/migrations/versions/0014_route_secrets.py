"""Every webhook route signs its notifications with a secret of its own (issue #29):
``notification_routes.secret``. Webhook routes stored before this revision get a random secret
each, so they are signed from now on too (an administrator sees it in the route list).

Revision ID: 0014_route_secrets
Revises: 0013_delivery_process
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0014_route_secrets"
down_revision: str | None = "0013_delivery_process"
branch_labels: tuple[str, ...] | None = None
depends_on: tuple[str, ...] | None = None


def upgrade() -> None:
    op.add_column(
        "notification_routes",
        sa.Column("secret", sa.Text, nullable=False, server_default=sa.text("''")),
    )
    routes = sa.table(
        "notification_routes",
        sa.column("id", sa.Text),
        sa.column("channel", sa.Text),
        sa.column("secret", sa.Text),
    )
    connection = op.get_bind()
    webhooks = connection.execute(
        sa.select(routes.c.id).where(routes.c.channel.like("webhook:%"))
    ).all()
    for (route_id,) in webhooks:
        connection.execute(
            sa.update(routes)
            .where(routes.c.id == route_id)
            .values(secret=secrets.token_urlsafe(32))
        )


def downgrade() -> None:
    op.drop_column("notification_routes", "secret")
