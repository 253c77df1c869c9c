"""Fixtures: a notification world on memory, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clarion.ports.testing import ManualClock
from tests.integration.notifications.support import NotifyWorld, notify_world, storage_for

BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(name="notify_clock")
def fixture_notify_clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(name="world", params=BACKENDS)
def fixture_world(
    request: pytest.FixtureRequest, tmp_path: Path, notify_clock: ManualClock
) -> Iterator[NotifyWorld]:
    with storage_for(request.param, request, tmp_path) as storage:
        world = notify_world(storage, notify_clock)
        try:
            yield world
        finally:
            if storage.close_probe is not None:
                storage.close_probe()
