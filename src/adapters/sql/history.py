"""The resolved list (issue #20) as ONE statement whose cost follows the page.

Shape::

    page   = resolved clarification rows ("heads"), walked BACKWARDS through the partial index
             ix_task_session_messages_resolved_order — (updated_at, bundle_pending_id) over
             answered/rejected clarification rows — keeping a head when
               it is the newest resolved row of its bundle (one head per bundle),
               no row of its bundle still carries the delivery marker (settled),
               its M5-resolved task exists (M5a) and is visible (L1c),
               and it lies at/after resolved_since and strictly before the cursor;
             LIMIT limit + 1
    result = page JOIN the page's clarification rows (questions, responses, the resolver)

A resolved row's ``updated_at`` is its claim's time (finalize keeps it; nothing else writes a
resolved row), so the walk meets every bundle at its position and stops after ``limit + 1``
accepted bundles however long the history is. Visibility and task resolution are the pending
list's own predicates (:mod:`clarion.adapters.sql.visibility`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from clarion.adapters.sql.listing import page_parameters, page_with_rows, read_page
from clarion.adapters.sql.metadata_sql import (
    Bytewise,
    is_clarification,
    is_delivery_pending,
    is_resolved,
)
from clarion.adapters.sql.records import MESSAGE_COLUMNS
from clarion.adapters.sql.schema import messages
from clarion.adapters.sql.types import UtcDateTime
from clarion.adapters.sql.visibility import (
    Seen,
    absent,
    bundle_key,
    keyed_task_id,
    no_bundle_row,
    task_is_visible,
)
from clarion.domain.history import ResolvedBundle, ResolvedPage, ResolvedQuery, resolved_bundle
from clarion.domain.listing import clamp_limit


@attrs.frozen
class Shape:
    """Which optional predicates a resolved-list query carries (one cached statement each)."""

    seen: Seen  # L1a–L1c, the pending list's visibility
    since: bool  # resolved_since
    before: bool  # the cursor

    @classmethod
    def of(cls, query: ResolvedQuery) -> Shape:
        return cls(
            seen=Seen.of(query.visibility),
            since=query.resolved_since is not None,
            before=query.before is not None,
        )


def _parameters(query: ResolvedQuery) -> dict[str, Any]:
    before_at, before_id = query.before if query.before is not None else (None, None)
    return page_parameters(
        query.visibility,
        query.limit,
        resolved_since=query.resolved_since,
        before_at=before_at,
        before_id=before_id,
    )


def _newest_resolved_row(head: sa.FromClause) -> Any:
    """No resolved row of the same bundle comes after ``head`` by (``updated_at``, ``id``)."""
    later = messages.alias("later")
    return absent(
        head,
        later,
        later.c.bundle_pending_id == head.c.bundle_pending_id,  # only that bundle's rows
        is_clarification(later),
        is_resolved(later),
        sa.or_(
            later.c.updated_at > head.c.updated_at,
            sa.and_(later.c.updated_at == head.c.updated_at, later.c.id > head.c.id),
        ),
    )


def _settled(head: sa.FromClause) -> Any:
    """No row of the bundle still waits for its delivery to settle."""
    return no_bundle_row(head, "marked", is_delivery_pending, bundle_key(head))


def _stamp(name: str) -> Any:
    return sa.bindparam(name, type_=UtcDateTime())


def _page_statement(shape: Shape) -> sa.Select[Any]:
    head = messages.alias("head")
    resolved_at = head.c.updated_at
    pending_id = head.c.bundle_pending_id
    bundle_task_id = keyed_task_id(head)
    accepted = sa.and_(
        _newest_resolved_row(head),
        _settled(head),
        task_is_visible(shape.seen, head, bundle_task_id),
    )
    statement = sa.select(
        pending_id.label("pending_id"),
        bundle_task_id.label("task_id"),
        resolved_at.label("resolved_at"),
    ).where(
        # The partial index's own terms, so both databases walk it ...
        is_clarification(head),
        is_resolved(head),
        pending_id.is_not(None),
        # ... and every other test per head visited (see clarion.adapters.sql.listing).
        sa.case((accepted, sa.true()), else_=sa.false()),
    )
    if shape.since:
        statement = statement.where(resolved_at >= _stamp("resolved_since"))
    if shape.before:  # strictly before the cursor; the <= bounds the index range
        before_at = _stamp("before_at")
        statement = statement.where(
            resolved_at <= before_at,
            sa.or_(
                resolved_at < before_at,
                pending_id < sa.bindparam("before_id", type_=sa.Text()),
            ),
        )
    page_limit = sa.bindparam("page_limit", type_=sa.Integer())
    return statement.order_by(resolved_at.desc(), pending_id.desc()).limit(page_limit)


@cache
def resolved_statement(shape: Shape) -> sa.Select[Any]:
    """The page of bundles (``limit + 1``) joined to their clarification rows."""
    page = _page_statement(shape).subquery("page")
    return page_with_rows(
        page,
        MESSAGE_COLUMNS,
        page.c.resolved_at.desc(),
        Bytewise(page.c.pending_id).desc(),
        messages.c.id,
    )


def list_resolved_bundles(connection: Connection, query: ResolvedQuery) -> ResolvedPage:
    """Run the resolved-list query and build the page."""
    limit = clamp_limit(query.limit)
    found = read_page(connection, resolved_statement(Shape.of(query)), _parameters(query))
    bundles: list[ResolvedBundle] = [
        resolved
        for pending_id, task_id, rows in found
        if (resolved := resolved_bundle(pending_id, task_id, rows)) is not None
    ]
    return ResolvedPage(bundles=tuple(bundles[:limit]), has_more=len(bundles) > limit)
