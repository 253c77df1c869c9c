"""The list query (spec L1–L16, facts §7) as ONE statement whose cost follows the page.

Shape::

    page   = pending clarification rows ("heads"), walked through the partial index
             ix_task_session_messages_pending_order in L6 order — (bundle_created_at, pending_id
             bytewise) — keeping a head when
               it is the first pending row of its bundle (one head per bundle),
               it is an active row (D4, the claim's ``is_active_row``),
               its bundle is well formed (the claim's guard) and every row of it has a question
               id (L16),
               its M5-resolved task exists (M5a) and is visible (L1c), in the workspace (L7a),
               and the bundle lies after created_since (L8) and the cursor (L9);
             LIMIT limit + 1
    result = page JOIN the page's clarification rows (for the questions, L3/L4)

``bundle_created_at`` is D1 (the minimum ``created_at`` of the bundle's clarification rows),
kept on every row by :func:`clarion.adapters.sql.records.insert_messages`; a bundle's rows all
carry the same value, so the walk meets every bundle at its L6 position and stops after
``limit + 1`` accepted bundles, however many are pending. Every filter is a probe by primary
key or by the ``pending_id`` expression index per head visited.

Visibility is a predicate inside the query, never a filter after the limit (L1a). The owner
rule (:meth:`Visibility.owned_by`) is an ``EXISTS`` on ``workspaces`` — nothing bound per
workspace; a set of ids (:meth:`Visibility.only`) is bound as an expanding ``IN`` and an empty
set drops the term instead of writing ``IN ()`` (L1b). The guard and the question-id reading
are the claim's own (fixes upstream §9.13, §9.14), so every listed bundle can be answered.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from clarion.adapters.sql.metadata_sql import Bytewise, Inline, const
from clarion.adapters.sql.predicates import (
    bundle_is_well_formed,
    has_question_id,
    is_clarification,
    is_pendingish,
    on_current_turn,
    pending_id_of,
    session_is_live,
)
from clarion.adapters.sql.records import MESSAGE_COLUMNS, message_record_at
from clarion.adapters.sql.schema import messages, task_sessions, tasks, workspaces
from clarion.adapters.sql.types import UtcDateTime
from clarion.domain.listing import (
    ListedBundle,
    ListPage,
    ListQuery,
    clamp_limit,
    listed_bundle,
)
from clarion.domain.rows import ClarificationRow, parse_row


@attrs.frozen
class Shape:
    """Which optional predicates a list query carries; one cached statement per shape, the
    values (visible ids, workspace, timestamps, cursor, limit) travel as bound parameters."""

    scoped: bool  # L1c applies (the caller is not unscoped)
    by_owner: bool  # the visible set is the owner rule, evaluated in SQL
    with_ids: bool  # a non-empty set of ids (L1b: otherwise no IN term at all)
    by_workspace: bool  # L7/L7a
    since: bool  # L8
    after: bool  # L9

    @classmethod
    def of(cls, query: ListQuery) -> Shape:
        visibility = query.visibility
        by_owner = not visibility.unscoped and visibility.owner_id is not None
        return cls(
            scoped=not visibility.unscoped,
            by_owner=by_owner,
            with_ids=not visibility.unscoped and not by_owner and bool(visibility.workspace_ids),
            by_workspace=bool(query.workspace_id),
            since=query.created_since is not None,
            after=query.after is not None,
        )


def parameters(query: ListQuery) -> dict[str, Any]:
    """The bound values of :func:`list_statement` for ``query``."""
    values: dict[str, Any] = {"page_limit": clamp_limit(query.limit) + 1}
    shape = Shape.of(query)
    if shape.by_owner:
        values["owner_id"] = query.visibility.owner_id
    elif shape.with_ids:
        values["visible_ids"] = sorted(query.visibility.workspace_ids)
    if query.workspace_id:
        values["workspace_id"] = query.workspace_id
    if query.created_since is not None:
        values["created_since"] = query.created_since
    if query.after is not None:
        values["after_at"], values["after_id"] = query.after
    return values


_ONE = Inline(1, sa.Integer())


def _visible(shape: Shape, task: sa.FromClause, workspace: sa.FromClause) -> ColumnElement[bool]:
    """L1c over the M5-resolved task and its workspace (left-joined): empty workspace id,
    dangling workspace (L1d's "equivalent left join with a null check"), or visible."""
    if not shape.scoped:
        return sa.true()
    terms: list[ColumnElement[bool]] = [
        task.c.workspace_id == const(""),
        workspace.c.id.is_(None),
    ]
    if shape.by_owner:  # L1a's rule itself: unowned, or owned by the caller
        terms.append(
            sa.or_(
                workspace.c.owner_id == const(""),
                workspace.c.owner_id == sa.bindparam("owner_id", type_=sa.Text()),
            )
        )
    elif shape.with_ids:  # L1b: no IN () for an empty set
        terms.append(task.c.workspace_id.in_(sa.bindparam("visible_ids", expanding=True)))
    return sa.or_(*terms)


def _task_is_visible(shape: Shape, head: sa.FromClause, task_id: Any) -> Any:
    """M5a (the task exists), L1c and L7a for the head's bundle, as one scalar subquery that
    probes the task and its workspace by primary key (NULL when the task does not exist)."""
    task = tasks.alias("task")
    workspace = workspaces.alias("workspace")
    terms = [_visible(shape, task, workspace)]
    if shape.by_workspace:  # L7a: "" means "not supplied"; an AND term, never a disjunct
        terms.append(task.c.workspace_id == sa.bindparam("workspace_id"))
    return (
        sa.select(sa.and_(*terms))
        .select_from(task.outerjoin(workspace, workspace.c.id == task.c.workspace_id))
        .where(task.c.id == task_id)
        .correlate(head)
        .scalar_subquery()
    )


def _session_is_live(head: sa.FromClause) -> Any:
    """:func:`session_is_live` of the head's session, probed by primary key (NULL when the
    session is missing) — ``in_live_session`` as a scalar, which PostgreSQL keeps a per-row
    probe instead of hashing every session."""
    session = task_sessions.alias("live")
    return (
        sa.select(session_is_live(session))
        .where(session.c.id == head.c.task_session_id)
        .correlate(head)
        .scalar_subquery()
    )


def _absent(head: sa.FromClause, row: sa.FromClause, *where: ColumnElement[bool]) -> Any:
    """``NOT EXISTS (row WHERE where)`` spelled as a scalar ``(SELECT 1 … LIMIT 1) IS NULL``:
    PostgreSQL may turn an uncorrelated-looking EXISTS into one hashed scan of the whole
    table; a scalar subquery always stays an index probe per head visited."""
    probe = sa.select(_ONE).select_from(row).where(*where).limit(1).correlate(head)
    return probe.scalar_subquery().is_(None)


def _first_pending_row(head: sa.FromClause) -> Any:
    """No pending clarification row of the same bundle comes before ``head`` by
    (``created_at``, ``id``): one head per bundle. (The bundle's rows share
    ``bundle_created_at`` and ``bundle_pending_id``: the probe is one point of the
    pending-order index.)"""
    earlier = messages.alias("earlier")
    return _absent(
        head,
        earlier,
        earlier.c.bundle_created_at == head.c.bundle_created_at,
        earlier.c.bundle_pending_id == head.c.bundle_pending_id,
        pending_id_of(earlier) == pending_id_of(head),
        is_clarification(earlier),
        is_pendingish(earlier),
        sa.or_(
            earlier.c.created_at < head.c.created_at,
            sa.and_(earlier.c.created_at == head.c.created_at, earlier.c.id < head.c.id),
        ),
    )


def _every_row_has_question_id(head: sa.FromClause) -> Any:
    """L16 over all the bundle's clarification rows."""
    row = messages.alias("qrow")
    return _absent(
        head,
        row,
        pending_id_of(row) == pending_id_of(head),
        is_clarification(row),
        ~has_question_id(row),
    )


def _task_id(head: sa.FromClause) -> ColumnElement[str]:
    """M5, the same rule as domain.rows.resolve_task_id: the smallest non-empty task id of
    the bundle's rows, else the head's session's task (the guard puts every row on it)."""
    row = messages.alias("trow")
    session = task_sessions.alias("tses")
    from_rows = (
        sa.select(sa.func.min(sa.func.nullif(row.c.task_id, const(""))))
        .where(pending_id_of(row) == pending_id_of(head), is_clarification(row))
        .correlate(head)
        .scalar_subquery()
    )
    from_session = (
        sa.select(session.c.task_id)
        .where(session.c.id == head.c.task_session_id)
        .correlate(head)
        .scalar_subquery()
    )
    return sa.func.coalesce(from_rows, from_session)


def _page_statement(shape: Shape) -> sa.Select[Any]:
    head = messages.alias("head")
    created_at = head.c.bundle_created_at
    pending_id = head.c.bundle_pending_id  # byte-wise on both databases (Key)
    task_id = _task_id(head)
    accepted = sa.and_(
        # One head per bundle first: the walk meets every bundle once per pending row, and
        # this single probe of the walked index turns the later rows away before the probes
        # below (both databases evaluate the conjuncts in order and stop at the first false).
        pending_id_of(head) != const(""),
        _first_pending_row(head),
        # D4 (L2a): is_active_row's conjuncts, pending-ish (below), current turn, live session
        on_current_turn(head),
        _session_is_live(head),
        bundle_is_well_formed(head),  # the claim's guard
        _every_row_has_question_id(head),  # L16
        _task_is_visible(shape, head, task_id),  # M5a: an existing task; L1c; L7a
    )
    statement = sa.select(
        pending_id_of(head).label("pending_id"),
        task_id.label("task_id"),
        created_at.label("created_at"),
    ).where(
        # The partial index's own terms, so both databases walk it...
        is_clarification(head),
        is_pendingish(head),
        # ...and every other test inside one CASE, evaluated per head visited. Written as
        # plain AND-ed EXISTS terms, PostgreSQL would turn them into joins over every pending
        # row and sort them all; under a CASE they stay per-row filters of the walk.
        sa.case((accepted, sa.true()), else_=sa.false()),
    )
    if shape.since:  # L8
        statement = statement.where(created_at >= _stamp("created_since"))
    if shape.after:  # L9: strictly after the cursor in L6 order; the >= starts the index range
        after_at = _stamp("after_at")
        statement = statement.where(
            created_at >= after_at,
            sa.or_(
                created_at > after_at,
                pending_id > sa.bindparam("after_id", type_=sa.Text()),
            ),
        )
    page_limit = sa.bindparam("page_limit", type_=sa.Integer())
    return statement.order_by(created_at, pending_id).limit(page_limit)


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
    for row in result:  # (bundle_pending_id, bundle_task_id, *MESSAGE_COLUMNS)
        entry = grouped.get(row[0])
        if entry is None:
            entry = grouped[row[0]] = (row[1], [])
        entry[1].append(parse_row(message_record_at(row, 2)))
    bundles: list[ListedBundle] = [
        listed_bundle(pending_id, task_id, rows) for pending_id, (task_id, rows) in grouped.items()
    ]
    return ListPage(bundles=tuple(bundles[:limit]), has_more=len(bundles) > limit)
