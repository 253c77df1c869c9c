"""Domain records read from and written to rows whose columns bear their fields' names.

Most stored records keep each field in a column of the same name; these functions state
that correspondence once, so a row→domain function (or an insert) names only the fields kept
under another name or in another form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import attrs
import sqlalchemy as sa
from attrs import AttrsInstance
from sqlalchemy.engine import Engine

R = TypeVar("R", bound=AttrsInstance)


def from_row(record_type: type[R], row: Mapping[Any, Any], /, **stored_apart: Any) -> R:
    """A ``record_type`` whose fields are read from ``row``'s columns of the same names, but
    for those given in ``stored_apart`` (read and converted by the caller).

    Raises:
        KeyError: ``row`` has no column for a field not given in ``stored_apart``.
    """
    names = [field.alias for field in attrs.fields(record_type) if field.init]
    return record_type(**{n: stored_apart[n] if n in stored_apart else row[n] for n in names})


def row_values(table: sa.Table, record: AttrsInstance, /, **stored_apart: Any) -> dict[str, Any]:
    """The values of ``table``'s columns named as ``record``'s fields, and ``stored_apart``
    (the columns kept under another name or in another form); the table's other columns keep
    their defaults."""
    fields = attrs.fields_dict(type(record))
    return {c.name: getattr(record, c.name) for c in table.c if c.name in fields} | stored_apart


def insert_record(writes: Engine, table: sa.Table, record: R, /, **stored_apart: Any) -> R:
    """Insert ``record``'s row (:func:`row_values`) into ``table`` in a write transaction of
    its own; return ``record``."""
    with writes.begin() as connection:
        connection.execute(sa.insert(table).values(row_values(table, record, **stored_apart)))
    return record
