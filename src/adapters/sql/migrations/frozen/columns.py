"""Column types and server defaults of the migrations, frozen from ``sql/types.py`` at revision
0016_closed_history (see :mod:`clarion.adapters.sql.migrations.frozen`; never edit).

``UtcDateTime`` stores aware UTC datetimes with microsecond precision: ``TIMESTAMP WITH TIME
ZONE`` on PostgreSQL, fixed-width ISO text on SQLite. ``Key`` is text compared byte-wise on
both databases (``COLLATE "C"`` on PostgreSQL).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

SQLITE_TIMESTAMP_WIDTH = 26

EMPTY = sa.text("''")
PAT_KIND_DEFAULT = sa.text("'pat'")

Key: TypeEngine[str] = sa.Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")


def _to_utc(value: datetime) -> datetime:
    """An aware UTC datetime.

    Raises:
        ValueError: for a naive datetime, which has no instant to store.
    """
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime cannot be stored: {value!r}")
    return value.astimezone(UTC)


def _parse_sqlite_timestamp(text: str) -> datetime:
    if len(text) == SQLITE_TIMESTAMP_WIDTH:
        try:
            return datetime.fromisoformat(text + "+00:00")
        except ValueError:
            pass
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


class UtcDateTime(sa.types.TypeDecorator[datetime]):
    """Aware UTC datetimes, microsecond precision, stored so order and equality are exact."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.String(SQLITE_TIMESTAMP_WIDTH))
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if dialect.name == "sqlite":
            return _to_utc(value).replace(tzinfo=None).isoformat(timespec="microseconds")
        return _to_utc(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            return _parse_sqlite_timestamp(value)
        if isinstance(value, datetime):
            return _to_utc(value)
        raise TypeError(f"unexpected timestamp value {value!r}")
