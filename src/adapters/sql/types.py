"""Column types shared by the schema and the migrations.

``UtcDateTime`` gives every reader the same instant (fixes upstream §9.18): values are aware
UTC datetimes with microsecond precision on the way in and on the way out. PostgreSQL keeps
them in ``TIMESTAMP WITH TIME ZONE``; SQLite keeps fixed-width ISO text
(``YYYY-MM-DDTHH:MM:SS.ffffff``), so text order is chronological order and ``MIN()`` and
keyset comparisons work on the stored value (facts §1.9).

``Key`` is the type of every id column: text compared byte-wise (code point order) on both
databases, so ``ORDER BY id`` and ``MIN(task_id)`` agree with Python's ``sorted``/``min``
whatever the PostgreSQL cluster's default collation is.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

SQLITE_TIMESTAMP_WIDTH = 26

# The empty-string server default, spelled as SQL so reflection reads back the same text on
# both databases (a plain "" reflects as a different clause on SQLite).
EMPTY = sa.text("''")
# ``access_tokens.kind`` of rows written before the column existed: personal access tokens.
PAT_KIND_DEFAULT = sa.text("'pat'")

Key: TypeEngine[str] = sa.Text().with_variant(postgresql.TEXT(collation="C"), "postgresql")


def to_utc(value: datetime) -> datetime:
    """An aware UTC datetime (microseconds are the finest unit Python keeps).

    Raises:
        ValueError: for a naive datetime, which has no instant to store.
    """
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime cannot be stored: {value!r}")
    return value.astimezone(UTC)


def format_sqlite_timestamp(value: datetime) -> str:
    """Fixed-width text whose lexical order is chronological (zero-padded year included)."""
    return to_utc(value).replace(tzinfo=None).isoformat(timespec="microseconds")


def parse_sqlite_timestamp(text: str) -> datetime:
    if len(text) == SQLITE_TIMESTAMP_WIDTH:  # what we write: parsed as UTC in one call
        try:
            return datetime.fromisoformat(text + "+00:00")
        except ValueError:
            pass  # a value of another shape: read it as before
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
            return format_sqlite_timestamp(value)
        return to_utc(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            return parse_sqlite_timestamp(value)
        if isinstance(value, datetime):
            return to_utc(value)
        raise TypeError(f"unexpected timestamp value {value!r}")
