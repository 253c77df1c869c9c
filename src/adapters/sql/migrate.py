"""Apply the shipped Alembic migrations programmatically (``clarion db upgrade`` and the
service start call :func:`upgrade_database`)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
import structlog
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL, Connection, Engine

from clarion.adapters.sql.engine import create_engine, write_transaction

logger = structlog.get_logger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Concurrent upgrades from several processes on one PostgreSQL database take turns.
_UPGRADE_LOCK_KEY = 0x636C6172696F6E  # "clarion"


def alembic_config() -> Config:
    """An in-memory Alembic configuration pointing at the packaged migrations."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:
        raise RuntimeError("no migrations found")
    return head


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def upgrade_database(url_or_engine: str | URL | Engine) -> str:
    """Bring the database to the newest schema in one transaction; returns the revision.

    Accepts a URL (an engine is created and disposed of) or an engine built with
    :func:`clarion.adapters.sql.create_engine`. Safe to run on every start: an up-to-date
    database is left untouched.
    """
    if isinstance(url_or_engine, Engine):
        return _upgrade(url_or_engine)
    engine = create_engine(url_or_engine)
    try:
        return _upgrade(engine)
    finally:
        engine.dispose()


def _upgrade(engine: Engine) -> str:
    config = alembic_config()
    with write_transaction(engine) as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(sa.select(sa.func.pg_advisory_xact_lock(_UPGRADE_LOCK_KEY)))
        before = current_revision(connection)
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        after = current_revision(connection)
    if before != after:
        logger.info("database.upgraded", from_revision=before, to_revision=after)
    return after or ""
