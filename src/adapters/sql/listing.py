"""The list query (spec L1–L16, facts §7) as ONE statement.

Shape::

    active   = pending ids with an active row (D4) of a well-formed bundle       -- the partial
                                                                                  -- index of
                                                                                  -- pending rows
    bundles  = per active pending id, over all its clarification rows:
               session, M5 task id, D1 created_at, "every row has a question id" (L16)
    page     = bundles JOIN tasks (inner: M5a) WHERE visibility (L1c) AND workspace filter
               (L7a) AND created_since (L8) AND keyset cursor (L9)
               ORDER BY created_at, pending_id LIMIT limit + 1
    result   = page JOIN the page's clarification rows (for the questions, L3/L4)

Visibility is a predicate inside the query, never a filter after the limit (L1a); an empty
visible set drops the ``IN`` term instead of writing ``IN ()`` (L1b). The guard and the
question-id reading are the claim's own (fixes upstream §9.13, §9.14), so every listed bundle
can be answered. Cost follows the pending rows, not the message history.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement

from clarion.adapters.sql.metadata_sql import const
from clarion.adapters.sql.predicates import (
    bundle_is_well_formed,
    current_turn_id,
    has_question_id,
    is_clarification,
    is_pendingish,
    pending_id_of,
    session_is_live,
)
from clarion.adapters.sql.records import MESSAGE_COLUMNS, message_record
from clarion.adapters.sql.schema import messages, task_sessions, tasks, workspaces
from clarion.adapters.sql.types import Key, UtcDateTime
from clarion.domain.listing import (
    ListedBundle,
    ListPage,
    ListQuery,
    clamp_limit,
    listed_bundle,
)
from clarion.domain.rows import ClarificationRow, parse_row


class Bytewise(FunctionElement[str]):
    """Text compared in code point order (``COLLATE "C"`` on PostgreSQL; SQLite's default
    BINARY already is), so L6's ``pending_id`` tie-break matches Python's ordering."""

    type = Key
    name = "bytewise"
    inherit_cache = True


@compiles(Bytewise)
def _bytewise_default(element: Bytewise, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.clauses, **kw)


@compiles(Bytewise, "postgresql")
def _bytewise_postgresql(element: Bytewise, compiler: SQLCompiler, **kw: Any) -> str:
    return f'({compiler.process(element.clauses, **kw)}) COLLATE "C"'


@attrs.frozen
class Shape:
    """Which optional predicates a list query carries; one cached statement per shape, the
    values (visible ids, workspace, timestamps, cursor, limit) travel as bound parameters."""

    scoped: bool  # L1c applies (the caller is not unscoped)
    with_ids: bool  # the visible set is non-empty (L1b: otherwise no IN term at all)
    by_workspace: bool  # L7/L7a
    since: bool  # L8
    after: bool  # L9

    @classmethod
    def of(cls, query: ListQuery) -> Shape:
        return cls(
            scoped=not query.visibility.unscoped,
            with_ids=not query.visibility.unscoped and bool(query.visibility.workspace_ids),
            by_workspace=bool(query.workspace_id),
            since=query.created_since is not None,
            after=query.after is not None,
        )


def parameters(query: ListQuery) -> dict[str, Any]:
    """The bound values of :func:`list_statement` for ``query``."""
    values: dict[str, Any] = {"page_limit": clamp_limit(query.limit) + 1}
    if not query.visibility.unscoped and query.visibility.workspace_ids:
        values["visible_ids"] = sorted(query.visibility.workspace_ids)
    if query.workspace_id:
        values["workspace_id"] = query.workspace_id
    if query.created_since is not None:
        values["created_since"] = query.created_since
    if query.after is not None:
        values["after_at"], values["after_id"] = query.after
    return values


def _visible(shape: Shape, task: sa.FromClause) -> ColumnElement[bool]:
    """L1c over the M5-resolved task: empty workspace, dangling workspace, or visible."""
    if not shape.scoped:
        return sa.true()
    workspace = workspaces.alias()
    terms: list[ColumnElement[bool]] = [
        task.c.workspace_id == const(""),
        ~sa.exists().where(workspace.c.id == task.c.workspace_id),
    ]
    if shape.with_ids:  # L1b: no IN () for an empty set
        terms.append(task.c.workspace_id.in_(sa.bindparam("visible_ids", expanding=True)))
    return sa.or_(*terms)


def _active_pending_ids() -> sa.Select[Any]:
    """Pending ids with an active row (D4) of a well-formed bundle, found per session.

    D4's conjuncts, each from :mod:`clarion.adapters.sql.predicates` (L2a), arranged so the
    work follows the pending rows: the sessions holding pending rows (an index-only scan of the
    partial index), those that are live (``session_is_live``) with their current turn
    (``current_turn_id``), then one probe of the partial index per (session, current turn) for
    the active rows themselves. Checking sessions once each, rather than per row, keeps the
    plan cheap on both databases whatever their row-count estimates.
    """
    pending = messages.alias("pending")
    session = task_sessions.alias("live_session")
    with_pending = sa.select(pending.c.task_session_id).where(
        is_clarification(pending), is_pendingish(pending)
    )
    live = (
        sa.select(
            session.c.id.label("session_id"),
            current_turn_id(session.c.id).label("turn_id"),
        )
        .where(session.c.id.in_(with_pending), session_is_live(session))
        .subquery("live")
    )
    act = messages.alias("act")
    return (
        sa.select(pending_id_of(act))
        .join_from(
            live,
            act,
            sa.and_(act.c.task_session_id == live.c.session_id, act.c.turn_id == live.c.turn_id),
        )
        .where(
            is_clarification(act),
            is_pendingish(act),
            bundle_is_well_formed(act),
            pending_id_of(act) != const(""),
        )
    )


def _page_statement(shape: Shape) -> sa.Select[Any]:
    active = _active_pending_ids()
    row = messages.alias("msg")
    session = task_sessions.alias("ses")
    has_id = sa.case((has_question_id(row), 1), else_=0)
    bundles = (
        sa.select(
            pending_id_of(row).label("pending_id"),
            sa.func.min(row.c.task_session_id).label("session_id"),
            # M5 — the same rule as domain.rows.resolve_task_id.
            sa.func.coalesce(
                sa.func.min(sa.func.nullif(row.c.task_id, const(""))),
                sa.func.min(session.c.task_id),
            ).label("task_id"),
            sa.func.min(row.c.created_at).label("created_at"),  # D1
        )
        .join_from(row, session, session.c.id == row.c.task_session_id)
        .where(is_clarification(row), pending_id_of(row).in_(active))
        .group_by(pending_id_of(row))
        .having(sa.func.min(has_id) == 1)  # L16: every row has a question id
        .subquery("bundles")
    )
    task = tasks.alias("task")
    pending_id = Bytewise(bundles.c.pending_id)
    statement = (
        sa.select(bundles.c.pending_id, bundles.c.task_id, bundles.c.created_at)
        .join_from(bundles, task, task.c.id == bundles.c.task_id)  # inner join: M5a
        .where(_visible(shape, task))
    )
    if shape.by_workspace:  # L7a: "" means "not supplied"; an AND term, never a disjunct
        statement = statement.where(task.c.workspace_id == sa.bindparam("workspace_id"))
    if shape.since:  # L8
        statement = statement.where(bundles.c.created_at >= _stamp("created_since"))
    if shape.after:  # L9: strictly after the cursor in L6 order
        after_at = _stamp("after_at")
        statement = statement.where(
            sa.or_(
                bundles.c.created_at > after_at,
                sa.and_(
                    bundles.c.created_at == after_at,
                    pending_id > sa.bindparam("after_id", type_=sa.Text()),
                ),
            )
        )
    page_limit = sa.bindparam("page_limit", type_=sa.Integer())
    return statement.order_by(bundles.c.created_at, pending_id).limit(page_limit)


def _stamp(name: str) -> Any:
    return sa.bindparam(name, type_=UtcDateTime())


@cache
def list_statement(shape: Shape) -> sa.Select[Any]:
    """The whole list query for one shape: the page of bundles (``limit + 1`` of them)
    joined to their clarification rows. Built once per shape."""
    page = _page_statement(shape).subquery("page")
    return (
        sa.select(
            page.c.pending_id.label("bundle_pending_id"),
            page.c.task_id.label("bundle_task_id"),
            *MESSAGE_COLUMNS,
        )
        .join_from(
            page,
            messages,
            sa.and_(pending_id_of(messages) == page.c.pending_id, is_clarification(messages)),
        )
        .order_by(page.c.created_at, Bytewise(page.c.pending_id), messages.c.id)
    )


def list_active_bundles(connection: Connection, query: ListQuery) -> ListPage:
    """Run the list query and build the page (rows read through ``parse_row``)."""
    limit = clamp_limit(query.limit)
    grouped: dict[str, tuple[str, list[ClarificationRow]]] = {}
    result = connection.execute(list_statement(Shape.of(query)), parameters(query))
    for row in result.mappings():
        entry = grouped.setdefault(row["bundle_pending_id"], (row["bundle_task_id"], []))
        entry[1].append(parse_row(message_record(row)))
    bundles: list[ListedBundle] = [
        listed_bundle(pending_id, task_id, rows) for pending_id, (task_id, rows) in grouped.items()
    ]
    return ListPage(bundles=tuple(bundles[:limit]), has_more=len(bundles) > limit)
