"""SQL readers of a message row's JSON ``metadata`` and the row-level predicates built on them.

Each reader mirrors one function of :mod:`clarion.domain.rows`, so SQL and Python read a row
the same way. They are built from SQLAlchemy's JSON operators, which compile for SQLite and
PostgreSQL alike; the one reading those operators cannot express — "is this value a JSON
string?" — is the small :class:`JsonIsString` construct below.

Every JSON key and constant is rendered *inline* (:class:`Inline`) rather than bound as a
parameter: the expression indexes and partial indexes of the schema are written with the same
functions, and both databases match an index only when the query spells the identical
expression with the identical constants (SQLite compares expression trees; PostgreSQL's
generic plans cannot prove a partial-index predicate over a parameter). Inline constants are
rendered when a statement is compiled, so cached statements pay nothing per execution.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import operators
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.visitors import InternalTraversal, _TraverseInternalsType
from sqlalchemy.types import TypeEngine

from clarion.domain.model import (
    ANSWERED,
    CANCELLED,
    CLARIFICATION_REQUEST,
    EXPIRED,
    PENDING,
    REJECTED,
)

# The columns these readers need; any table or alias of ``task_session_messages`` has them.
MessageFrom = sa.FromClause


class Inline(ColumnElement[Any]):
    """A constant written into the SQL text by the dialect's literal renderer (JSON paths
    become ``'$."key"'`` on SQLite and ``'key'`` / ``'{a,b}'`` on PostgreSQL)."""

    __visit_name__ = "clarion_inline"
    inherit_cache = True
    # The cache key covers the value and type, so equal constants share a compiled statement.
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
    """A string constant rendered inline (see the module docstring)."""
    return Inline(value, sa.Text())


def _key(name: str) -> Any:
    return Inline(name, sa.JSON.JSONIndexType())


def _path(names: tuple[str, ...]) -> Any:
    return Inline(tuple(names), sa.JSON.JSONPathType())


def text_at(m: MessageFrom, key: str) -> ColumnElement[str]:
    """``metadata[key]`` as text: strings verbatim, other scalars as their JSON text, NULL
    when absent or JSON null."""
    return m.c.metadata[_key(key)].as_string()  # type: ignore[no-any-return]


def text_at_path(m: MessageFrom, *keys: str) -> ColumnElement[str]:
    """``metadata[k1][k2]...`` as text, NULL when any step is absent or not an object."""
    doc = m.c.metadata
    expr = doc.comparator.operate(operators.json_path_getitem_op, _path(keys), result_type=doc.type)
    return expr.as_string()  # type: ignore[no-any-return]


class JsonIsString(FunctionElement[bool]):
    """True iff the JSON value at ``path`` in ``doc`` is a string (NULL/false otherwise).

    Needed because ``question_id_from_metadata`` accepts only string ids, while the JSON text
    readers render a number ``5`` as ``'5'``.
    """

    type = sa.Boolean()
    name = "json_is_string"
    inherit_cache = True


@compiles(JsonIsString, "sqlite")
def _json_is_string_sqlite(element: JsonIsString, compiler: SQLCompiler, **kw: Any) -> str:
    doc, path = element.clauses
    return f"(json_type({compiler.process(doc, **kw)}, {compiler.process(path, **kw)}) = 'text')"


@compiles(JsonIsString, "postgresql")
def _json_is_string_postgresql(element: JsonIsString, compiler: SQLCompiler, **kw: Any) -> str:
    doc, path = element.clauses
    return (
        f"(jsonb_typeof({compiler.process(doc, **kw)} #> {compiler.process(path, **kw)})"
        " = 'string')"
    )


def is_string_at(m: MessageFrom, *keys: str) -> ColumnElement[bool]:
    return JsonIsString(m.c.metadata, _path(keys))


class _PostgresCollation(FunctionElement[str]):
    """Text in the collation ``collation`` on PostgreSQL, as it is on SQLite (whose BINARY
    default is already code point order, and which has no default collation to name)."""

    type = sa.Text()
    inherit_cache = True
    collation = ""


class Bytewise(_PostgresCollation):
    """Text compared in code point order (``COLLATE "C"`` on PostgreSQL), so L6's
    ``pending_id`` tie-break matches Python's ordering."""

    name = "bytewise"
    collation = "C"
    inherit_cache = True  # the class is part of the cache key: the two never share a statement


class DefaultCollation(_PostgresCollation):
    """A ``Key`` column compared with an expression of the database's default collation — the
    pending-id expression index — in that collation (``COLLATE "default"`` on PostgreSQL,
    where a ``COLLATE "C"`` column would otherwise impose its own and rule the index out).
    Equality is the same in either collation."""

    name = "default_collation"
    collation = "default"
    inherit_cache = True


@compiles(_PostgresCollation)
def _collation_default(element: _PostgresCollation, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.clauses, **kw)


@compiles(_PostgresCollation, "postgresql")
def _collation_postgresql(element: _PostgresCollation, compiler: SQLCompiler, **kw: Any) -> str:
    return f'({compiler.process(element.clauses, **kw)}) COLLATE "{element.collation}"'


# --- the readers ---------------------------------------------------------------------------


def pending_id_of(m: MessageFrom) -> ColumnElement[str]:
    """``metadata.pending_id`` — the bundle key, backed by an expression index."""
    return text_at(m, "pending_id")


def status_of(m: MessageFrom) -> ColumnElement[str]:
    return text_at(m, "status")


def is_clarification(m: MessageFrom) -> ColumnElement[bool]:
    """Lookups by pending id consider clarification rows only (fixes upstream §9.17)."""
    return m.c.type == const(CLARIFICATION_REQUEST)


def is_pendingish(m: MessageFrom) -> ColumnElement[bool]:
    """D3/D4 ``COALESCE(status, '') IN ('', 'pending')``: absent, JSON null, "" and "pending".

    Written as ``coalesce(...) = '' OR coalesce(...) = 'pending'`` with inline constants so
    the partial index over pending rows (same expression) applies on both databases.
    """
    status = sa.func.coalesce(status_of(m), const(""))
    return sa.or_(status == const(""), status == const(PENDING))


def is_resolved(m: MessageFrom) -> ColumnElement[bool]:
    """D3: the row's status is "answered" or "rejected" (the claim's terminal outcomes)."""
    return status_of(m).in_([const(ANSWERED), const(REJECTED)])


def is_ended(m: MessageFrom) -> ColumnElement[bool]:
    """The row was expired or cancelled (issue #30: closed without an answer)."""
    return status_of(m).in_([const(EXPIRED), const(CANCELLED)])


def is_truthy_at(m: MessageFrom, key: str) -> ColumnElement[bool]:
    """Upstream's truthy flag (``domain.rows.is_truthy``): JSON true, 1, "true" or "1".

    SQLite reads JSON true as 1 and PostgreSQL as 'true', so both spellings are accepted.
    """
    value = sa.func.coalesce(text_at(m, key), const(""))
    return sa.or_(value == const("true"), value == const("1"))


def is_detached(m: MessageFrom) -> ColumnElement[bool]:
    return is_truthy_at(m, "agent_disconnected")


def is_delivery_pending(m: MessageFrom) -> ColumnElement[bool]:
    return is_truthy_at(m, "response_delivery_pending")


def question_id_of(m: MessageFrom) -> ColumnElement[str]:
    """``domain.rows.question_id_from_metadata``: the flat ``question_id`` when it is a
    non-empty string, else ``question.id`` when it is a string, else "" (the one reading
    every consumer shares, fixes upstream §9.13)."""
    flat = text_at(m, "question_id")
    return sa.case(
        (sa.and_(is_string_at(m, "question_id"), flat != const("")), flat),
        (is_string_at(m, "question", "id"), text_at_path(m, "question", "id")),
        else_=const(""),
    )


# --- editing a metadata document in place ---------------------------------------------------


class AsJson(FunctionElement[Any]):
    """A JSON text value inserted as JSON (not as a string) by :class:`JsonSet`."""

    type = sa.JSON()
    name = "as_json"
    inherit_cache = True


@compiles(AsJson, "sqlite")
def _as_json_sqlite(element: AsJson, compiler: SQLCompiler, **kw: Any) -> str:
    return f"json({compiler.process(element.clauses, **kw)})"


@compiles(AsJson, "postgresql")
def _as_json_postgresql(element: AsJson, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST({compiler.process(element.clauses, **kw)} AS JSONB)"


class JsonSet(FunctionElement[Any]):
    """``doc`` with top-level keys set: ``JsonSet(doc, key1, value1, key2, value2, ...)``.

    Keys are :func:`const` strings; values are SQL text (stored as JSON strings) or
    :class:`AsJson` values. Compiles to ``json_set`` on SQLite and ``jsonb ||
    jsonb_build_object`` on PostgreSQL — SQLAlchemy has no portable JSON-edit operator.
    """

    type = sa.JSON()
    name = "json_set_keys"
    inherit_cache = True


def _json_set_parts(element: JsonSet) -> tuple[Any, list[tuple[Any, Any]]]:
    doc, *rest = element.clauses
    pairs = [(rest[i], rest[i + 1]) for i in range(0, len(rest), 2)]
    return doc, pairs


@compiles(JsonSet, "sqlite")
def _json_set_sqlite(element: JsonSet, compiler: SQLCompiler, **kw: Any) -> str:
    doc, pairs = _json_set_parts(element)
    args = [compiler.process(doc, **kw)]
    for key, value in pairs:
        args.append(compiler.process(_key(key.value), **kw))
        args.append(compiler.process(value, **kw))
    return f"json_set({', '.join(args)})"


@compiles(JsonSet, "postgresql")
def _json_set_postgresql(element: JsonSet, compiler: SQLCompiler, **kw: Any) -> str:
    doc, pairs = _json_set_parts(element)
    args = []
    for key, value in pairs:
        args.append(compiler.process(key, **kw))
        args.append(compiler.process(value, **kw))
    return f"({compiler.process(doc, **kw)} || jsonb_build_object({', '.join(args)}))"


def json_set(m: MessageFrom, values: dict[str, Any]) -> ColumnElement[Any]:
    """The row's metadata with ``values`` (key → SQL value) set."""
    clauses: list[Any] = [m.c.metadata]
    for key, value in values.items():
        clauses.extend((const(key), value))
    return JsonSet(*clauses)


class JsonRemove(FunctionElement[Any]):
    """``doc`` without the top-level key ``key`` (a :func:`const`): ``json_remove`` on SQLite,
    the ``jsonb - text`` operator on PostgreSQL."""

    type = sa.JSON()
    name = "json_remove_key"
    inherit_cache = True


@compiles(JsonRemove, "sqlite")
def _json_remove_sqlite(element: JsonRemove, compiler: SQLCompiler, **kw: Any) -> str:
    doc, key = element.clauses
    return f"json_remove({compiler.process(doc, **kw)}, {compiler.process(_key(key.value), **kw)})"


@compiles(JsonRemove, "postgresql")
def _json_remove_postgresql(element: JsonRemove, compiler: SQLCompiler, **kw: Any) -> str:
    doc, key = element.clauses
    return f"({compiler.process(doc, **kw)} - {compiler.process(key, **kw)})"


def json_remove(m: MessageFrom, key: str) -> ColumnElement[Any]:
    """The row's metadata without ``key``."""
    return JsonRemove(m.c.metadata, const(key))
