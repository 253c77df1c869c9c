"""L9/L13: the opaque cursor and RFC 3339 timestamp arguments."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given

from clarion.domain import InvalidArgument, decode_cursor, encode_cursor, parse_timestamp
from tests.strategies import aware_datetimes, pending_ids, utc_datetimes


def _b64(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@given(utc_datetimes(), pending_ids())
def test_l9_cursor_round_trips_exactly(created_at: datetime, pending_id: str) -> None:
    decoded = decode_cursor(encode_cursor(created_at, pending_id))
    assert decoded == (created_at, pending_id)
    assert decoded[0].tzinfo is UTC


@given(aware_datetimes(), pending_ids())
def test_l9_cursor_keeps_the_instant_of_a_non_utc_timestamp(
    created_at: datetime, pending_id: str
) -> None:
    decoded_at, decoded_id = decode_cursor(encode_cursor(created_at, pending_id))
    assert decoded_at == created_at
    assert decoded_at.utcoffset() == timedelta(0)
    assert decoded_id == pending_id


def test_l9_cursor_is_url_safe_and_unpadded() -> None:
    cursor = encode_cursor(datetime(2024, 5, 1, 12, 0, 0, 7, tzinfo=UTC), "?>?>~~|ü")
    assert "=" not in cursor
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def test_l9_cursor_keeps_microseconds() -> None:
    stamp = datetime(2024, 5, 1, 12, 0, 0, 1, tzinfo=UTC)
    assert decode_cursor(encode_cursor(stamp, "p"))[0].microsecond == 1
    assert encode_cursor(stamp, "p") != encode_cursor(stamp.replace(microsecond=0), "p")


@pytest.mark.parametrize(
    "cursor",
    [
        pytest.param("", id="empty"),
        pytest.param("%%%%", id="not-base64"),
        pytest.param("a", id="bad-base64-length"),
        pytest.param("ü", id="non-ascii"),
        pytest.param(base64.urlsafe_b64encode(b"\xff\xfe|p").decode(), id="invalid-utf8"),
        pytest.param(_b64("2024-05-01T12:00:00.000000Z"), id="no-separator"),
        pytest.param(_b64("2024-05-01T12:00:00.000000Z|"), id="empty-pending-id"),
        pytest.param(_b64("yesterday|p1"), id="bad-timestamp"),
        pytest.param(_b64("2024-05-01|p1"), id="date-only"),
        pytest.param(_b64("2024-05-01T12:00:00.5Z|p1"), id="non-canonical-fraction"),
        pytest.param(_b64("2024-05-01T12:00:00.000000Z|p1") + "!", id="trailing-junk"),
        pytest.param(
            base64.b64encode(b"2024-05-01T12:00:00.000000Z|p?>?").decode(),
            id="standard-alphabet",
        ),
    ],
)
def test_l13_corrupt_cursor_is_rejected_naming_cursor(cursor: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        decode_cursor(cursor)
    assert caught.value.field == "cursor"


def test_l13_a_cursor_from_elsewhere_with_the_right_shape_decodes() -> None:
    assert decode_cursor(_b64("2024-05-01T12:00:00.000001Z|a|b")) == (
        datetime(2024, 5, 1, 12, 0, 0, 1, tzinfo=UTC),
        "a|b",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T12:00:00Z", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        ("2024-05-01T12:00:00z", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        ("2024-05-01T12:00:00+00:00", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        ("2024-05-01T14:30:00+02:30", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        ("2024-05-01T04:00:00-08:00", datetime(2024, 5, 1, 12, tzinfo=UTC)),
        ("2024-05-01T12:00:00.5Z", datetime(2024, 5, 1, 12, 0, 0, 500000, tzinfo=UTC)),
        ("2024-05-01T12:00:00.123456Z", datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)),
        (" 2024-05-01T12:00:00Z ", datetime(2024, 5, 1, 12, tzinfo=UTC)),
    ],
)
def test_l8_rfc3339_timestamps_are_parsed_to_utc(text: str, expected: datetime) -> None:
    parsed = parse_timestamp(text, argument="created_since")
    assert parsed == expected
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-01",
        "2024-05-01T12:00:00",
        "2024-05-01 12:00:00",
        "garbage",
        "",
        "Z",
        "2024-13-01T12:00:00Z",
        "12:00:00Z",
    ],
)
def test_l13_unparseable_timestamps_are_rejected_naming_the_argument(text: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_timestamp(text, argument="created_since")
    assert caught.value.field == "created_since"


@pytest.mark.parametrize(
    "text",
    [
        "2026-W01-1T00:00Z",  # an ISO week date, the example
        "2026-W01-1T00:00:00Z",
        "2026-001T00:00:00Z",  # an ordinal date
        "20260105T093000Z",  # ISO basic format
        "2026-01-05T09Z",  # hours alone
        "2026-01-05T09:30Z",  # no seconds
        "2026-01-05T09:30:00,5Z",  # a comma before the fraction
        "2026-01-05T09:30:00.Z",
        "2026-01-05T09:30:00+0100",  # an offset without its colon
        "2026-01-05T09:30:00+01",
        "2026-01-05T09:30:00+24:00",
        "2026-01-05T24:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-01-05T09:30:61Z",
        "0000-01-01T00:00:00Z",
        "２０２６-01-05T09:30:00Z",  # non-ASCII digits
        "2026-01-05T09:30:00UTC",
        "2026-01-05t09:30:00",
    ],
)
def test_f20_only_rfc3339_date_times_are_accepted(text: str) -> None:
    """#29 F20: what ``datetime.fromisoformat`` reads beyond RFC 3339 is refused, naming the
    argument."""
    with pytest.raises(InvalidArgument) as caught:
        parse_timestamp(text, argument="created_since")
    assert caught.value.field == "created_since"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-05t09:30:00z", datetime(2026, 1, 5, 9, 30, tzinfo=UTC)),
        ("2026-01-05T09:30:00.1234567Z", datetime(2026, 1, 5, 9, 30, 0, 123456, tzinfo=UTC)),
        ("2026-01-05T09:30:00-00:00", datetime(2026, 1, 5, 9, 30, tzinfo=UTC)),
        ("2016-12-31T23:59:60Z", datetime(2017, 1, 1, tzinfo=UTC)),  # a leap second
        ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=UTC)),
    ],
)
def test_f20_every_rfc3339_date_time_is_read(text: str, expected: datetime) -> None:
    assert parse_timestamp(text, argument="created_since") == expected


def test_l13_the_named_argument_is_whatever_the_caller_passes() -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_timestamp("nope", argument="updated_after")
    assert caught.value.field == "updated_after"


def test_parse_timestamp_accepts_what_the_cursor_encodes() -> None:
    stamp = datetime(2024, 5, 1, 12, 0, 0, 42, tzinfo=timezone(timedelta(hours=3)))
    assert parse_timestamp(stamp.isoformat(), argument="created_since") == stamp
