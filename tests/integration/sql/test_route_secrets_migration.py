"""Migration ``0014_route_secrets`` on both databases (issue #29: notification webhooks signed
by default): webhook routes stored before it get a random secret each, the other channels
none, and the store reads them back."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from clarion.adapters.sql import SqlNotificationStore, upgrade_database
from clarion.adapters.sql.engine import write_transaction
from clarion.adapters.sql.schema import JsonDocument
from clarion.adapters.sql.types import Key, UtcDateTime
from clarion.adapters.system import UuidIds
from clarion.ports.testing import ManualClock
from tests.integration.sql.revisions import BACKENDS, engine_at_revision

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(name="old_engine", params=BACKENDS)
def fixture_old_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A database migrated to ``0013_delivery_process``, the revision before."""
    with engine_at_revision(request, tmp_path, "0013_delivery_process") as engine:
        yield engine


def test_webhook_routes_stored_before_get_a_secret_each(old_engine: Engine) -> None:
    routes = sa.table(
        "notification_routes",
        sa.column("id", Key),
        sa.column("channel", sa.Text),
        sa.column("events", JsonDocument),
        sa.column("on_deadline", sa.Text),
        sa.column("created_at", UtcDateTime),
    )
    rows = [("hook-1", "webhook:https://a.example/x"), ("hook-2", "webhook:https://b.example/y")]
    rows.append(("mail-1", "email:ops@example.com"))
    with write_transaction(old_engine) as connection:
        for route_id, channel in rows:
            connection.execute(
                sa.insert(routes).values(
                    id=route_id,
                    channel=channel,
                    events=["answerable"],
                    on_deadline="keep",
                    created_at=NOW,
                )
            )
    upgrade_database(old_engine)
    store = SqlNotificationStore(old_engine, ManualClock(NOW), UuidIds())
    secrets = {route.id: route.secret for route in store.list_routes()}
    assert secrets["mail-1"] == ""
    assert len(secrets["hook-1"]) >= 40
    assert len(secrets["hook-2"]) >= 40
    assert secrets["hook-1"] != secrets["hook-2"]
