"""SQL readers of a message row's JSON ``metadata`` and the predicates of the migrations'
partial indexes, frozen from ``sql/metadata_sql.py`` at revision 0016_closed_history (see
:mod:`clarion.adapters.sql.migrations.frozen`; never edit).

Keys and constants are rendered inline, as the live readers render them, so an index created
here is the identical expression the queries of that revision spell (both databases match an
index only against the identical expression). The status and type constants are the stored
strings of that revision, written out rather than read from the domain.
"""

from __future__ import annotations

from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal, _TraverseInternalsType
from sqlalchemy.types import TypeEngine

CLARIFICATION_REQUEST = "clarification_request"
PENDING = "pending"
ANSWERED = "answered"
REJECTED = "rejected"
CANCELLED = "cancelled"
EXPIRED = "expired"
TERMINAL_SESSION_STATES = ("CANCELLED", "COMPLETED", "FAILED")  # sorted

MessageFrom = sa.FromClause


class Inline(ColumnElement[Any]):
    """A constant written into the SQL text by the dialect's literal renderer."""

    __visit_name__ = "clarion_frozen_inline"
    inherit_cache = True
    _traverse_internals: _TraverseInternalsType = [  # noqa: RUF012 - SQLAlchemy's own shape
        ("value", InternalTraversal.dp_plain_obj),
        ("type", InternalTraversal.dp_type),
    ]

    def __init__(self, value: Any, type_: TypeEngine[Any]) -> None:
        self.value = value
        self.type = type_


@compiles(Inline)
def _render_inline(element: Inline, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.render_literal_value(element.value, element.type)


def const(value: str) -> ColumnElement[str]:
    """A string constant rendered inline."""
    return Inline(value, sa.Text())


def _key(name: str) -> Any:
    return Inline(name, sa.JSON.JSONIndexType())


def text_at(m: MessageFrom, key: str) -> ColumnElement[str]:
    """``metadata[key]`` as text."""
    return cast("ColumnElement[str]", m.c.metadata[_key(key)].as_string())


def pending_id_of(m: MessageFrom) -> ColumnElement[str]:
    return text_at(m, "pending_id")


def status_of(m: MessageFrom) -> ColumnElement[str]:
    return text_at(m, "status")


def is_clarification(m: MessageFrom) -> ColumnElement[bool]:
    return m.c.type == const(CLARIFICATION_REQUEST)


def is_pendingish(m: MessageFrom) -> ColumnElement[bool]:
    """``coalesce(status, '') = '' OR coalesce(status, '') = 'pending'``."""
    status = sa.func.coalesce(status_of(m), const(""))
    return sa.or_(status == const(""), status == const(PENDING))


def is_resolved(m: MessageFrom) -> ColumnElement[bool]:
    return status_of(m).in_([const(ANSWERED), const(REJECTED)])


def is_ended(m: MessageFrom) -> ColumnElement[bool]:
    return status_of(m).in_([const(EXPIRED), const(CANCELLED)])


def is_truthy_at(m: MessageFrom, key: str) -> ColumnElement[bool]:
    """JSON true, 1, "true" or "1"."""
    value = sa.func.coalesce(text_at(m, key), const(""))
    return sa.or_(value == const("true"), value == const("1"))


def is_delivery_pending(m: MessageFrom) -> ColumnElement[bool]:
    return is_truthy_at(m, "response_delivery_pending")
