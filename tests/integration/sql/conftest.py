"""Engines for the SQL integration tests (see :mod:`tests.integration.sql.support`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from tests.integration.sql.support import (
    empty_database,
    migrated_postgres_engine,
    migrated_sqlite_engine,
)


@pytest.fixture(name="sqlite_engine")
def fixture_sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    """A fresh, migrated SQLite file database."""
    with migrated_sqlite_engine(tmp_path) as engine:
        yield engine


@pytest.fixture(name="shared_postgres_engine", scope="module")
def fixture_shared_postgres_engine(postgres_server_url: str) -> Iterator[Engine]:
    with migrated_postgres_engine(postgres_server_url) as engine:
        yield engine


@pytest.fixture(name="postgres_engine")
def fixture_postgres_engine(shared_postgres_engine: Engine) -> Engine:
    """The module's migrated PostgreSQL database, emptied for this test."""
    empty_database(shared_postgres_engine)
    return shared_postgres_engine


@pytest.fixture(
    name="engine", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def fixture_engine(request: pytest.FixtureRequest) -> Engine:
    """Each test taking ``engine`` runs once on SQLite and once on PostgreSQL."""
    name = "sqlite_engine" if request.param == "sqlite" else "postgres_engine"
    engine: Engine = request.getfixturevalue(name)
    return engine
