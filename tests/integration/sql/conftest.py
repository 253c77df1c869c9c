"""Engines for the SQL integration tests (see :mod:`tests.integration.sql.support`)."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine


@pytest.fixture(
    name="engine", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def fixture_engine(request: pytest.FixtureRequest) -> Engine:
    """Each test taking ``engine`` runs once on SQLite and once on PostgreSQL."""
    name = "sqlite_engine" if request.param == "sqlite" else "postgres_engine"
    engine: Engine = request.getfixturevalue(name)
    return engine
