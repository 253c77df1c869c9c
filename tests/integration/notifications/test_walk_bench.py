"""``benchmarks/notification_walk.py`` (issue #32): the walk from a claim to a sent e-mail, on
SQLite with the real e-mail channel, costs one poll round, one read of the task, one load of
the bundle and nine store transactions — for the answerable e-mail and for the resolved one,
whose batch also holds the bundle's answerable event. The figures are deterministic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.notification_walk import Counts, Sink, smtp_sink, walk
from clarion.domain.notifications import ANSWERABLE, RESOLVED

pytestmark = [pytest.mark.anyio, pytest.mark.server]


@pytest.fixture(name="smtp")
def fixture_smtp() -> Iterator[tuple[Sink, int]]:
    with smtp_sink() as served:
        yield served


@pytest.mark.parametrize("event", [ANSWERABLE, RESOLVED])
async def test_an_email_costs_one_bundle_load_one_task_read_and_nine_transactions(
    event: str, smtp: tuple[Sink, int], tmp_path: Path
) -> None:
    sink, port = smtp
    counts = await walk(tmp_path / "clarion.db", port, sink, event)
    assert counts == Counts(rounds=1, transactions=9, task_reads=1, bundle_loads=1)
    (message,) = sink.messages
    assert message["To"] == "alice@example.com"
