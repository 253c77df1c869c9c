"""A database at an older migration, for the tests of the migrations after it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy.engine import Engine

from clarion.adapters.sql import create_engine
from clarion.adapters.sql.engine import write_transaction
from clarion.adapters.sql.migrate import alembic_config

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
"""The ``params`` of a fixture using :func:`engine_at_revision`: each test on both databases."""


def upgrade_to(engine: Engine, revision: str) -> None:
    """Apply the migrations up to ``revision`` (and no further)."""
    config = alembic_config()
    with write_transaction(engine) as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


@contextmanager
def engine_at_revision(
    request: pytest.FixtureRequest, tmp_path: Path, revision: str
) -> Iterator[Engine]:
    """A fresh database — a SQLite file, or a PostgreSQL database when ``request.param`` is
    "postgresql" — migrated to ``revision``, disposed of afterwards."""
    url = (
        f"sqlite:///{tmp_path / 'old.db'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("postgres_database_url"))
    )
    engine = create_engine(url)
    try:
        upgrade_to(engine, revision)
        yield engine
    finally:
        engine.dispose()
