"""Fixtures for the MCP tests: a served world on SQLite, in both protocol eras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.integration.mcp.harness import MODES, McpWorld, Person, serving


@pytest.fixture(name="mode", params=MODES, ids=["modern", "legacy"])
def fixture_mode(request: pytest.FixtureRequest) -> str:
    """``auto`` negotiates 2026-07-28 (sessionless); ``legacy`` runs 2025-11-25 sessions."""
    mode = request.param
    assert isinstance(mode, str)
    return mode


@pytest.fixture(name="sqlite_url")
def fixture_sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'clarion.db'}"


@pytest.fixture(
    name="database_url", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def fixture_database_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    """A fresh database: a SQLite file, then a PostgreSQL database (issue #14: every check on
    both)."""
    if request.param == "sqlite":
        return sqlite_url
    url = request.getfixturevalue("postgres_database_url")
    assert isinstance(url, str)
    return url


@pytest.fixture(name="world")
async def fixture_world(sqlite_url: str) -> AsyncIterator[McpWorld]:
    """Auth enabled, a fast progress interval, served on a real socket."""
    async with serving(McpWorld.build(sqlite_url, progress_interval=0.05)) as world:
        yield world


@pytest.fixture(name="alice")
def fixture_alice(world: McpWorld) -> Person:
    return world.person("alice")


@pytest.fixture(name="bob")
def fixture_bob(world: McpWorld) -> Person:
    return world.person("bob")
