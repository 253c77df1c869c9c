"""The opaque listing cursor (L9, L13): an exact round-trip of ``(created_at, pending_id)``."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime

from clarion.domain.errors import InvalidArgument
from clarion.domain.timestamps import parse_rfc3339


def encode_cursor(created_at: datetime, pending_id: str) -> str:
    """Unpadded URL-safe base64 of ``<created_at ISO-8601 UTC, microseconds>|<pending_id>``."""
    # isoformat, not strftime: strftime("%Y") drops the zero padding of years before 1000,
    # which strptime("%Y") then cannot read back (L13 round-trip).
    stamp = created_at.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")
    raw = f"{stamp}Z|{pending_id}".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """Decode a cursor; raise :class:`InvalidArgument` naming ``cursor`` when it is corrupt."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise InvalidArgument("cursor: not a valid cursor", field="cursor") from exc
    stamp, sep, pending_id = raw.partition("|")
    if not sep or not pending_id:
        raise InvalidArgument("cursor: malformed cursor", field="cursor")
    try:
        created_at = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError as exc:
        raise InvalidArgument("cursor: malformed cursor timestamp", field="cursor") from exc
    if encode_cursor(created_at, pending_id) != cursor:
        # Non-canonical encodings would make two cursors mean one position; refuse them.
        raise InvalidArgument("cursor: malformed cursor", field="cursor")
    return created_at, pending_id


def parse_timestamp(value: str, *, argument: str) -> datetime:
    """Parse an RFC 3339 timestamp argument (L8, L13; strictly, #29 F20: see
    :func:`~clarion.domain.timestamps.parse_rfc3339`) to an aware UTC datetime. Surrounding
    whitespace is ignored.

    Raises:
        InvalidArgument: not an RFC 3339 date-time; ``field`` is ``argument``.
    """
    try:
        return parse_rfc3339(value.strip())
    except ValueError as exc:
        raise InvalidArgument(f"{argument}: {exc}: {value!r}", field=argument) from exc
