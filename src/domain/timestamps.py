"""Strict RFC 3339 date-times (#29 F20): the one parser for every time a caller sends.

``datetime.fromisoformat`` reads far more than RFC 3339 — ISO week dates (``2026-W01-1``),
ordinal dates, basic formats without separators, hours alone, a comma before the fraction —
so a time argument accepted values no other RFC 3339 reader would. :func:`parse_rfc3339`
accepts exactly RFC 3339 §5.6 ``date-time``::

    full-date "T" partial-time ("Z" / ("+" / "-") time-hour ":" time-minute)

with ``T`` and ``Z`` in either case (§5.6 note), any number of fraction digits (kept to the
microsecond, the rest truncated), ``-00:00`` read as UTC and a leap second (``:60``) read as
the first instant of the next minute.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Final

_DATE_TIME: Final = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})"
    r"[Tt](?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]+))?"
    r"(?:(?P<utc>[Zz])|(?P<sign>[+-])(?P<offset_hour>[0-9]{2}):(?P<offset_minute>[0-9]{2}))",
    re.ASCII,
)


def parse_rfc3339(text: str) -> datetime:
    """The instant ``text`` names, as an aware datetime in UTC.

    Raises:
        ValueError: ``text`` is not an RFC 3339 ``date-time`` (like
            ``2026-01-05T09:30:00Z``), names no real date or time (February 30, hour 24,
            offset +24:00), or lies outside the years 1–9999 in UTC. The message says which.
    """
    match = _DATE_TIME.fullmatch(text)
    if match is None:
        raise ValueError("not an RFC 3339 timestamp")
    part = match.groupdict()
    second = int(part["second"])
    if second > 60:
        raise ValueError("seconds must be 00-60")
    offset_hour, offset_minute = int(part["offset_hour"] or 0), int(part["offset_minute"] or 0)
    if offset_hour > 23 or offset_minute > 59:
        raise ValueError("the UTC offset must be between -23:59 and +23:59")
    offset = timedelta(hours=offset_hour, minutes=offset_minute)
    fraction = (part["fraction"] or "")[:6].ljust(6, "0")
    try:
        moment = datetime(
            int(part["year"]),
            int(part["month"]),
            int(part["day"]),
            int(part["hour"]),
            int(part["minute"]),
            min(second, 59),
            int(fraction),
            tzinfo=timezone(-offset if part["sign"] == "-" else offset),
        )
    except ValueError as exc:
        raise ValueError(f"not a real date and time: {exc}") from None
    try:
        if second == 60:  # a leap second: the instant it ends at
            moment = moment.replace(microsecond=0) + timedelta(seconds=1)
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError("out of range (years 1-9999 in UTC)") from None


__all__ = ["parse_rfc3339"]
