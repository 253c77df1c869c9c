"""Who may see a bundle, in SQL (spec L1a–L1d, M5, M5a; issues #14 and #15): written once for
the pending list, the resolved list and the read of one bundle.

A caller's :class:`~clarion.domain.listing.Visibility` becomes a :class:`Seen` (which terms the
statement carries; one cached statement per shape) and its bound values
(:meth:`Seen.parameters`). The owner rule is an ``EXISTS``-style probe of ``workspaces`` with
the caller's id bound once — nothing bound per workspace; a set of ids is an expanding ``IN``,
and an empty set drops the term instead of writing ``IN ()`` (L1b).

Every predicate here judges the bundle of a row of ``task_session_messages`` (the "head", an
alias the caller walks) through its M5-resolved task: :func:`task_id` resolves it,
:func:`task_is_visible` probes the task and its workspace by primary key.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import attrs
import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from clarion.adapters.sql.metadata_sql import (
    DefaultCollation,
    Inline,
    const,
    is_clarification,
    pending_id_of,
)
from clarion.adapters.sql.schema import (
    bundle_candidates,
    group_members,
    messages,
    task_sessions,
    tasks,
    workspaces,
)
from clarion.domain.listing import Visibility

_ONE = Inline(1, sa.Integer())


@attrs.frozen
class Seen:
    """Which visibility terms a statement carries (values travel as bound parameters)."""

    scoped: bool  # L1c applies (the caller is not unscoped)
    by_owner: bool  # the visible set is the owner rule, evaluated in SQL
    with_ids: bool  # a non-empty set of ids (L1b: otherwise no IN term at all)
    assigned: bool = False  # issue #33: the assignment filter applies (``assignee`` bound)

    @classmethod
    def of(cls, visibility: Visibility) -> Seen:
        by_owner = not visibility.unscoped and visibility.owner_id is not None
        return cls(
            scoped=not visibility.unscoped,
            by_owner=by_owner,
            with_ids=not visibility.unscoped and not by_owner and bool(visibility.workspace_ids),
            assigned=visibility.assignee is not None,
        )

    @property
    def filtered(self) -> bool:
        """Whether any visibility term applies (a scoped caller or an assignee)."""
        return self.scoped or self.assigned

    @staticmethod
    def parameters(visibility: Visibility) -> dict[str, Any]:
        """The bound values of the terms :meth:`of` chose for ``visibility``."""
        values: dict[str, Any] = {}
        if visibility.assignee is not None:
            values["assignee"] = visibility.assignee
        if visibility.unscoped:
            return values
        if visibility.owner_id is not None:
            values["owner_id"] = visibility.owner_id
        elif visibility.workspace_ids:
            values["visible_ids"] = sorted(visibility.workspace_ids)
        return values


def visible(seen: Seen, task: sa.FromClause, workspace: sa.FromClause) -> ColumnElement[bool]:
    """L1c over a task and its workspace (left-joined): empty workspace id, dangling workspace
    (L1d's "equivalent left join with a null check"), or in the visible set."""
    if not seen.scoped:
        return sa.true()
    terms: list[ColumnElement[bool]] = [
        task.c.workspace_id == const(""),
        workspace.c.id.is_(None),
    ]
    if seen.by_owner:  # L1a's rule itself: unowned, or owned by the caller
        terms.append(
            sa.or_(
                workspace.c.owner_id == const(""),
                workspace.c.owner_id == sa.bindparam("owner_id", type_=sa.Text()),
            )
        )
    elif seen.with_ids:  # L1b: no IN () for an empty set
        terms.append(task.c.workspace_id.in_(sa.bindparam("visible_ids", expanding=True)))
    return sa.or_(*terms)


def assignment_admits(
    seen: Seen, key: Any, head: sa.FromClause | None = None
) -> ColumnElement[bool]:
    """Issue #33: the bundle ``key`` (its pending id, as a ``Key`` column or a bound value)
    has no candidates, or the caller ``assignee`` (bound) is one — directly, or through a
    group they belong to. True (no term at all) when the filter does not apply, so every
    other statement keeps its exact shape. Two primary-key probes of ``bundle_candidates``
    per bundle judged; ``group_members`` is probed by its user index."""
    if not seen.assigned:
        return sa.true()
    assignee = sa.bindparam("assignee", type_=sa.Text())
    anyone = bundle_candidates.alias("cand_any")
    mine = bundle_candidates.alias("cand_mine")
    member = group_members.alias("member")
    my_groups = sa.select(member.c.group_id).where(member.c.user_id == assignee)
    unassigned = sa.select(_ONE).where(anyone.c.pending_id == key).limit(1)
    candidate = (
        sa.select(_ONE)
        .where(
            mine.c.pending_id == key,
            sa.or_(
                sa.and_(mine.c.subject_kind == const("user"), mine.c.subject_id == assignee),
                sa.and_(mine.c.subject_kind == const("group"), mine.c.subject_id.in_(my_groups)),
            ),
        )
        .limit(1)
    )
    if head is not None:
        unassigned, candidate = unassigned.correlate(head), candidate.correlate(head)
    return sa.or_(unassigned.scalar_subquery().is_(None), candidate.scalar_subquery().is_not(None))


def bundle_key(head: sa.FromClause) -> ColumnElement[str]:
    """The pending id of a head met by a walk of one of the keyed partial indexes (the pending
    and resolved lists): its ``bundle_pending_id`` column. On every clarification row with a
    pending id that column holds exactly the pending id the domain reads
    (:func:`clarion.adapters.sql.records.bundle_keys`) and NULL otherwise, so the probes by
    pending id compare against it instead of decoding the head's JSON metadata once per
    probe — the largest cost of a page on SQLite, where every ``json_extract`` parses the
    whole document. (In the database's default collation, so the pending-id expression index
    serves the probes on PostgreSQL too: :class:`DefaultCollation`.)"""
    return DefaultCollation(head.c.bundle_pending_id)


def _key(head: sa.FromClause, key: ColumnElement[str] | None) -> ColumnElement[str]:
    return pending_id_of(head) if key is None else key


def head_session_value(
    head: sa.FromClause, alias: str, value: Callable[[sa.FromClause], ColumnElement[Any]]
) -> sa.ScalarSelect[Any]:
    """``value`` of the head's session as a scalar probe by primary key (NULL when the
    session is missing), which PostgreSQL keeps a per-row probe instead of hashing every
    session; ``alias`` names the session in the statement."""
    session = task_sessions.alias(alias)
    return (
        sa.select(value(session))
        .where(session.c.id == head.c.task_session_id)
        .correlate(head)
        .scalar_subquery()
    )


def _session_task_id(head: sa.FromClause) -> sa.ScalarSelect[Any]:
    """M5's fallback: the task of the head's session."""
    return head_session_value(head, "tses", lambda session: session.c.task_id)


def task_id(head: sa.FromClause, key: ColumnElement[str] | None = None) -> ColumnElement[str]:
    """M5, the same rule as domain.rows.resolve_task_id: the smallest non-empty task id of
    the bundle's rows, else the head's session's task (the claim's guard puts every row of an
    answerable bundle on it). ``key`` is the head's pending id when the caller has it as a
    column (:func:`bundle_key`); by default it is read from the head's metadata."""
    row = messages.alias("trow")
    from_rows = (
        sa.select(sa.func.min(sa.func.nullif(row.c.task_id, const(""))))
        .where(pending_id_of(row) == _key(head, key), is_clarification(row))
        .correlate(head)
        .scalar_subquery()
    )
    return sa.func.coalesce(from_rows, _session_task_id(head))


def keyed_task_id(head: sa.FromClause) -> ColumnElement[str]:
    """:func:`task_id` of a head met by a walk of a keyed index (:func:`bundle_key`): M5's
    rows part is the head's own ``bundle_task_id`` (the smallest non-empty task id of its
    bundle's rows, kept with the other keys), so only the session's task, when no row
    carries one, is probed."""
    return sa.func.coalesce(
        sa.func.nullif(head.c.bundle_task_id, const("")), _session_task_id(head)
    )


def task_is_visible(
    seen: Seen, head: sa.FromClause, of_task: Any, *, by_workspace: bool = False
) -> Any:
    """M5a (the task exists), L1c and — with ``by_workspace`` — L7a for the head's bundle, as
    one scalar subquery that probes the task and its workspace by primary key (NULL when the
    task does not exist), and the assignment filter (issue #33) when it applies."""
    task = tasks.alias("task")
    workspace = workspaces.alias("workspace")
    # Issue #33: the head's bundle (its keyed pending id) assigned to the caller, or to nobody.
    terms = [
        visible(seen, task, workspace),
        assignment_admits(seen, head.c.bundle_pending_id, head),
    ]
    if by_workspace:  # L7a: "" means "not supplied"; an AND term, never a disjunct
        terms.append(task.c.workspace_id == sa.bindparam("workspace_id"))
    return (
        sa.select(sa.and_(*terms))
        .select_from(task.outerjoin(workspace, workspace.c.id == task.c.workspace_id))
        .where(task.c.id == of_task)
        .correlate(head)
        .scalar_subquery()
    )


def absent(head: sa.FromClause, row: sa.FromClause, *where: ColumnElement[bool]) -> Any:
    """``NOT EXISTS (row WHERE where)`` spelled as a scalar ``(SELECT 1 … LIMIT 1) IS NULL``:
    PostgreSQL may turn an uncorrelated-looking EXISTS into one hashed scan of the whole
    table; a scalar subquery always stays an index probe per head visited."""
    probe = sa.select(_ONE).select_from(row).where(*where).limit(1).correlate(head)
    return probe.scalar_subquery().is_(None)


def no_bundle_row(
    head: sa.FromClause,
    name: str,
    where: Callable[[sa.FromClause], ColumnElement[bool]],
    key: ColumnElement[str] | None = None,
) -> Any:
    """No clarification row of the head's bundle (an alias ``name``) satisfies ``where``
    (``key`` as in :func:`task_id`)."""
    row = messages.alias(name)
    return absent(
        head, row, pending_id_of(row) == _key(head, key), is_clarification(row), where(row)
    )


@cache
def bundle_is_visible(seen: Seen) -> ColumnElement[bool]:
    """Whether the bundle ``pending_id`` (bound) has a clarification row whose M5-resolved task
    exists and is visible (the lists' :func:`task_is_visible`): one verdict for the whole
    bundle, uncorrelated to the rows it filters, so both databases judge it once per
    statement (PostgreSQL: a one-time filter) and a hidden bundle reads zero rows.

    Every row resolves the same task unless all of them carry an empty task id and they lie on
    several sessions (a malformed legacy bundle): then this is true when any row's session
    task is visible, and the reader confirms the D2-first row's (see ``load_visible_bundle``).
    """
    row = messages.alias("vrow")
    pending_id = sa.bindparam("pending_id", type_=sa.Text())
    probe = (
        sa.select(_ONE)
        .select_from(row)
        .where(
            pending_id_of(row) == pending_id,
            is_clarification(row),
            task_is_visible(seen, row, task_id(row)),
        )
        .limit(1)
        .scalar_subquery()
    )
    if not seen.scoped:  # only the assignment filter (issue #33)
        return assignment_admits(seen, pending_id)
    return probe.is_not(None)


@cache
def task_visibility(seen: Seen) -> sa.Select[Any]:
    """Whether the task ``task_id`` (bound) exists and is visible: one row holding true or
    false, none when the task does not exist."""
    task = tasks.alias("task")
    workspace = workspaces.alias("workspace")
    return (
        sa.select(visible(seen, task, workspace))
        .select_from(task.outerjoin(workspace, workspace.c.id == task.c.workspace_id))
        .where(task.c.id == sa.bindparam("task_id", type_=sa.Text()))
    )


__all__ = [
    "Seen",
    "absent",
    "assignment_admits",
    "bundle_is_visible",
    "bundle_key",
    "keyed_task_id",
    "no_bundle_row",
    "task_id",
    "task_is_visible",
    "task_visibility",
    "visible",
]
