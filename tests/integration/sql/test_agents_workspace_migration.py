"""Migration ``0015_agents_workspace`` on both databases (#29 S6): per owner, the oldest
workspace named "Agents" — the one ``/mcp/agent`` used until now — becomes that owner's agents
workspace; a younger duplicate (two processes racing before) stays an ordinary workspace, and
no workspace or task is lost."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from clarion.adapters.sql import SqlHostRepository, upgrade_database
from clarion.adapters.sql.types import Key, UtcDateTime
from clarion.adapters.system import UuidIds
from clarion.ports.testing import ManualClock
from tests.integration.sql.revisions import BACKENDS, engine_at_revision

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(name="old_engine", params=BACKENDS)
def fixture_old_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An empty database migrated to the revision before ``0015_agents_workspace``."""
    with engine_at_revision(request, tmp_path, "0014_route_secrets") as engine:
        yield engine


def test_the_oldest_agents_workspace_of_each_owner_becomes_its_key(old_engine: Engine) -> None:
    workspaces = sa.table(
        "workspaces",
        sa.column("id", Key),
        sa.column("name", sa.Text),
        sa.column("owner_id", Key),
        sa.column("created_at", UtcDateTime),
        sa.column("updated_at", UtcDateTime),
    )
    rows = [
        ("alice-dup", "Agents", "alice", 2),  # the younger duplicate of a race
        ("alice-agents", "Agents", "alice", 1),
        ("alice-other", "Projects", "alice", 0),
        ("shared", "Agents", "", 3),
        ("bob-notes", "Notes", "bob", 4),
    ]
    with old_engine.begin() as connection:
        connection.execute(
            sa.insert(workspaces),
            [
                {
                    "id": workspace_id,
                    "name": name,
                    "owner_id": owner,
                    "created_at": NOW + timedelta(seconds=offset),
                    "updated_at": NOW,
                }
                for workspace_id, name, owner, offset in rows
            ],
        )
    upgrade_database(old_engine)
    host = SqlHostRepository(old_engine, ManualClock(), UuidIds())
    assert host.agents_workspace("alice", "Agents").id == "alice-agents"
    assert host.agents_workspace("", "Agents").id == "shared"
    bobs = host.agents_workspace("bob", "Agents")
    assert bobs.id not in {row[0] for row in rows}
    assert {w.id for w in host.list_workspaces()} == {row[0] for row in rows} | {bobs.id}
