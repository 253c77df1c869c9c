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
