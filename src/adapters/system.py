"""The production clock and id generator."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime


class SystemClock:
    """:class:`clarion.ports.Clock` over the system clock: aware UTC, microsecond precision
    (Python datetimes carry no finer digits, so nothing is ever rounded by a reader)."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class UuidIds:
    """:class:`clarion.ports.IdGenerator` issuing UUID-4 text."""

    def new_id(self) -> str:
        return str(uuid.uuid4())
