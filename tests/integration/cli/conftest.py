"""The administration commands' shared setup: the database the CLI writes to (SQLite and
PostgreSQL) and the server's own view of it (``support.run_cli`` runs one command)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings


@pytest.fixture(
    name="database_url", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def fixture_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The database the commands are pointed at (``--database-url``)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'clarion.db'}"
    return str(request.getfixturevalue("postgres_database_url"))


@pytest.fixture(name="clarion")
def fixture_clarion(database_url: str) -> Iterator[Clarion]:
    """The server's view of the same database (what a running server would read and check)."""
    settings = Settings(database_url=database_url, auth_enabled=True, live_delivery="memory")
    clarion = build_clarion(settings)
    clarion.upgrade()  # the server's start-up step: the schema the CLI and the server share
    try:
        yield clarion
    finally:
        clarion.close()
