"""SQLite timestamps read back as the same aware UTC instant whatever shape the text has
(the fixed-width form Clarion writes takes one parsing call)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from clarion.adapters.sql.types import format_sqlite_timestamp, parse_sqlite_timestamp

INSTANT = datetime(2025, 1, 2, 3, 4, 5, 7, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "2025-01-02T03:04:05.000007",  # as written
        "2025-01-02 03:04:05.000007",  # a space separator, same width
        "2025-01-02T03:04:05.000007Z",  # other widths and an explicit zone: read as before
        "2025-01-02T03:04:05.000007+00:00",
    ],
)
def test_stored_text_reads_back_as_the_utc_instant(text: str) -> None:
    parsed = parse_sqlite_timestamp(text)
    assert parsed == INSTANT
    assert parsed.tzinfo is UTC


def test_a_written_timestamp_round_trips() -> None:
    assert parse_sqlite_timestamp(format_sqlite_timestamp(INSTANT)) == INSTANT
