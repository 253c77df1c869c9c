"""Alembic environment: runs on the connection :func:`upgrade_database` passes in."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from clarion.adapters.sql.schema import metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


_connection = context.config.attributes.get("connection")
if not isinstance(_connection, Connection):
    raise RuntimeError("run migrations through clarion.adapters.sql.upgrade_database()")
_run(_connection)
