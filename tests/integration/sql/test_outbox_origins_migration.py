"""Migration ``0017_outbox_origins`` on both databases (issue #32: relations stored as data):
each outbox entry stored before it gets the key of the event it follows from, parsed from its
own key — deliveries, reminders, escalations, deadlines and terminal updates of every kind of
event, a resolution's told apart by its claim time — and events (and keys of no known form)
none; the store reads them back."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from clarion.adapters.sql import SqlNotificationStore, upgrade_database
from clarion.adapters.sql.engine import write_transaction
from clarion.adapters.sql.types import Key, UtcDateTime
from clarion.adapters.system import UuidIds
from clarion.domain.notifications import RESOLVED, event_key
from clarion.ports.testing import ManualClock
from tests.integration.sql.revisions import BACKENDS, engine_at_revision

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CLAIMED = datetime(2026, 1, 1, 11, 59, 30, 123456, tzinfo=UTC)


@pytest.fixture(name="old_engine", params=BACKENDS)
def fixture_old_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A database migrated to ``0016_closed_history``, the revision before."""
    with engine_at_revision(request, tmp_path, "0016_closed_history") as engine:
        yield engine


def test_entries_stored_before_get_the_key_of_the_event_they_follow_from(
    old_engine: Engine,
) -> None:
    resolved = event_key(RESOLVED, "p:1", CLAIMED)  # a pending id with a colon in it
    answerable, expired = "answerable:p:1", "expired:p-2"
    rows = {
        # key: (pending id, route id, the origin the migration must find)
        answerable: ("p:1", "", ""),
        f"{answerable}:r-1:answerable": ("p:1", "r-1", answerable),
        f"{answerable}:r-1:reminder:2": ("p:1", "r-1", answerable),
        f"{answerable}:r-1:escalation": ("p:1", "r-boss", answerable),
        f"{answerable}:r-1:deadline": ("p:1", "r-1", answerable),
        resolved: ("p:1", "", ""),
        f"{resolved}:r-1:resolved": ("p:1", "r-1", resolved),
        f"{resolved}:r-1:resolved:settled": ("p:1", "r-1", resolved),
        f"{answerable}:r-1:answerable:settled": ("p:1", "r-1", answerable),
        f"{expired}:r-2:expired": ("p-2", "r-2", expired),
        "superseded:p-2:r-2:superseded": ("p-2", "r-2", "superseded:p-2"),
        "hand-made-key": ("p-2", "r-2", ""),
    }
    outbox = sa.table(
        "notification_outbox",
        sa.column("id", Key),
        sa.column("pending_id", Key),
        sa.column("event", sa.Text),
        sa.column("route_id", Key),
        sa.column("status", sa.Text),
        sa.column("due_at", UtcDateTime),
        sa.column("idempotency_key", sa.Text),
        sa.column("created_at", UtcDateTime),
    )
    with write_transaction(old_engine) as connection:
        for n, (key, (pending_id, route_id, _)) in enumerate(rows.items()):
            connection.execute(
                sa.insert(outbox).values(
                    id=f"e-{n:02}",
                    pending_id=pending_id,
                    event=key.split(":", 1)[0],
                    route_id=route_id,
                    status="done",
                    due_at=NOW,
                    idempotency_key=key,
                    created_at=NOW,
                )
            )
    upgrade_database(old_engine)
    store = SqlNotificationStore(old_engine, ManualClock(NOW), UuidIds())
    found = {entry.idempotency_key: entry.origin_key for entry in store.entries()}
    assert found == {key: origin for key, (_, _, origin) in rows.items()}
