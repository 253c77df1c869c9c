"""The columns of ``task_session_messages`` that past migrations declared inline, each
identically, in the lightweight tables they read and write through: taken unchanged from
0001 and 0004, 0005, 0013, 0016 (``type`` and ``metadata``, what the partial indexes'
predicates read) and 0003, 0010, 0019 (a message row's ten columns since 0001, followed there
by the columns each revision adds). See :mod:`clarion.adapters.sql.migrations.frozen`; never
edit. Each call makes new column objects: a column belongs to one table.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.sql.expression import ColumnClause

from clarion.adapters.sql.migrations.frozen.columns import Key, UtcDateTime

MESSAGES = "task_session_messages"


def kind_columns() -> list[ColumnClause[Any]]:
    """``type`` and ``metadata``, in that order."""
    return [
        sa.column("type", sa.Text),
        sa.column("metadata", sa.JSON().with_variant(JSONB(), "postgresql")),
    ]


def message_columns() -> list[ColumnClause[Any]]:
    """A message row's ten columns since 0001, in their order."""
    return [
        sa.column("id", Key),
        sa.column("task_session_id", Key),
        sa.column("task_id", Key),
        sa.column("turn_id", Key),
        sa.column("author_type", sa.Text),
        sa.column("content", sa.Text),
        *kind_columns(),
        sa.column("created_at", UtcDateTime),
        sa.column("updated_at", UtcDateTime),
    ]
