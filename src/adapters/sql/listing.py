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
kept on every row with the bundle's other keys by
:func:`clarion.adapters.sql.records.insert_messages`; a bundle's rows all carry the same value,
so the walk meets every bundle at its L6 position and stops after ``limit + 1`` accepted
bundles, however many are pending. Every filter is a probe by primary key or by an index per
head visited, comparing with the head's key columns rather than its JSON; L16 and M5's task id
from the rows are the head's own keys (``bundle_complete``, ``bundle_task_id``: facts of the
bundle's rows, recomputed whenever a row of it is inserted or deleted).

Visibility is a predicate inside the query, never a filter after the limit (L1a), written once
in :mod:`clarion.adapters.sql.visibility` for this list, the resolved list and the read of one
bundle. The guard is the claim's own, and L16 reads question ids with the domain's reader
(fixes upstream §9.13, §9.14), so every listed bundle can be answered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from itertools import groupby
from typing import Any

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from clarion.adapters.sql.metadata_sql import Bytewise, DefaultCollation
from clarion.adapters.sql.predicates import (
    bundle_is_well_formed,
    is_clarification,
    is_pendingish,
    on_current_turn,
    pending_id_of,
    session_is_live,
)
from clarion.adapters.sql.records import message_record_at
from clarion.adapters.sql.schema import messages
from clarion.adapters.sql.types import UtcDateTime
from clarion.adapters.sql.visibility import (
    Seen,
    absent,
    bundle_key,
    head_session_value,
    keyed_task_id,
    task_is_visible,
)
from clarion.domain.listing import (
    ListPage,
    ListQuery,
    Visibility,
    clamp_limit,
    listed_bundle_from_metadata,
)
from clarion.domain.rows import ClarificationRow, parse_row


@attrs.frozen
class Shape:
    """Which optional predicates a list query carries; one cached statement per shape, the
    values (visible ids, workspace, timestamps, cursor, limit) travel as bound parameters."""

    seen: Seen  # L1a–L1c
    by_workspace: bool  # L7/L7a
    since: bool  # L8
    after: bool  # L9

    @classmethod
    def of(cls, query: ListQuery) -> Shape:
        return cls(
            seen=Seen.of(query.visibility),
            by_workspace=bool(query.workspace_id),
            since=query.created_since is not None,
            after=query.after is not None,
        )


def page_parameters(visibility: Visibility, limit: int | None, **optional: Any) -> dict[str, Any]:
    """The bound values a page statement (this list's or the resolved list's) takes:
    ``page_limit`` (L10's clamp, plus one to see ``has_more``), the visibility's, and each of
    ``optional`` that is not None."""
    values: dict[str, Any] = {"page_limit": clamp_limit(limit) + 1}
    values.update(Seen.parameters(visibility))
    values.update({name: value for name, value in optional.items() if value is not None})
    return values


def parameters(query: ListQuery) -> dict[str, Any]:
    """The bound values of :func:`list_statement` for ``query``."""
    after_at, after_id = query.after if query.after is not None else (None, None)
    return page_parameters(
        query.visibility,
        query.limit,
        workspace_id=query.workspace_id or None,
        created_since=query.created_since,
        after_at=after_at,
        after_id=after_id,
    )


def _session_is_live(head: sa.FromClause) -> Any:
    """:func:`session_is_live` of the head's session — ``in_live_session`` as a scalar probe
    by primary key (:func:`head_session_value`)."""
    return head_session_value(head, "live", session_is_live)


def _first_pending_row(head: sa.FromClause) -> Any:
    """No pending clarification row of the same bundle comes before ``head`` by
    (``created_at``, ``id``): one head per bundle. (The bundle's rows share
    ``bundle_created_at`` and ``bundle_pending_id``, and only a row with that pending id
    carries it: the probe is one point of the pending-order index, whose own terms make
    ``earlier`` a pending clarification row.)"""
    earlier = messages.alias("earlier")
    return absent(
        head,
        earlier,
        earlier.c.bundle_created_at == head.c.bundle_created_at,
        earlier.c.bundle_pending_id == head.c.bundle_pending_id,
        is_clarification(earlier),
        is_pendingish(earlier),
        sa.or_(
            earlier.c.created_at < head.c.created_at,
            sa.and_(earlier.c.created_at == head.c.created_at, earlier.c.id < head.c.id),
        ),
    )


def _every_row_has_question_id(head: sa.FromClause) -> Any:
    """L16 over all the bundle's clarification rows, as the head's keys record it."""
    return head.c.bundle_complete.is_(sa.true())


def _page_statement(shape: Shape) -> sa.Select[Any]:
    head = messages.alias("head")
    created_at = head.c.bundle_created_at
    pending_id = head.c.bundle_pending_id  # byte-wise on both databases (Key)
    # Every probe by pending id compares with that column rather than decoding the head's
    # metadata once per probe (bundle_key).
    key = bundle_key(head)
    task_id = keyed_task_id(head)
    # Both databases evaluate these conjuncts in order and stop at the first false one, so
    # the probes that turn most heads away come first, and the guard — a probe of the
    # bundle's rows of every type — runs only for the visible heads.
    accepted = sa.and_(
        # One head per bundle: the walk meets every bundle once per pending row, and this
        # single probe of the walked index turns the later rows away.
        _first_pending_row(head),
        # D4 (L2a): is_active_row's conjuncts, pending-ish (below), current turn, live session
        on_current_turn(head),
        _session_is_live(head),
        # M5a: an existing task; L1c; L7a
        task_is_visible(shape.seen, head, task_id, by_workspace=shape.by_workspace),
        bundle_is_well_formed(head, key),  # the claim's guard
        _every_row_has_question_id(head),  # L16
    )
    statement = sa.select(
        pending_id.label("pending_id"),
        task_id.label("task_id"),
        created_at.label("created_at"),
    ).where(
        # The partial index's own terms, so both databases walk it (a row without a pending
        # id carries no keys: it belongs to no bundle)...
        is_clarification(head),
        is_pendingish(head),
        pending_id.is_not(None),
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


def page_with_rows(page: sa.Subquery, columns: Sequence[Any], *order_by: Any) -> sa.Select[Any]:
    """A page of bundles (``pending_id``, ``task_id``) joined to their clarification rows:
    ``(bundle_pending_id, bundle_task_id, *columns)`` per row, in ``order_by``."""
    return (
        sa.select(
            page.c.pending_id.label("bundle_pending_id"),
            page.c.task_id.label("bundle_task_id"),
            *columns,
        )
        .join_from(
            page,
            messages,
            sa.and_(
                # the page's pending id may be a bundle_pending_id (C collation on PostgreSQL):
                # compared in the default one, so the pending-id expression index serves it
                pending_id_of(messages) == DefaultCollation(page.c.pending_id),
                is_clarification(messages),
            ),
        )
        .order_by(*order_by)
    )


def read_page(
    connection: Connection, statement: sa.Select[Any], params: dict[str, Any]
) -> list[tuple[str, str, list[ClarificationRow]]]:
    """Run a :func:`page_with_rows` statement of :data:`MESSAGE_COLUMNS`: each bundle's
    (pending id, task id, rows), in the statement's order (rows read by position through
    ``parse_row``)."""
    grouped: dict[str, tuple[str, list[ClarificationRow]]] = {}
    for row in connection.execute(statement, params):
        entry = grouped.get(row[0])
        if entry is None:
            entry = grouped[row[0]] = (row[1], [])
        entry[1].append(parse_row(message_record_at(row, 2)))
    return [(pending_id, task_id, rows) for pending_id, (task_id, rows) in grouped.items()]


# What a listed bundle shows of its rows (domain.listing.StoredRow), and no more: the page
# decodes one timestamp and one JSON document per row.
LISTED_COLUMNS = (
    messages.c.id,
    messages.c.task_session_id,
    messages.c.created_at,
    messages.c.metadata,
)


@cache
def list_statement(shape: Shape) -> sa.Select[Any]:
    """The whole list query for one shape: the page of bundles (``limit + 1`` of them)
    joined to their clarification rows' :data:`LISTED_COLUMNS`. Built once per shape."""
    page = _page_statement(shape).subquery("page")
    return page_with_rows(
        page, LISTED_COLUMNS, page.c.created_at, Bytewise(page.c.pending_id), messages.c.id
    )


def list_active_bundles(connection: Connection, query: ListQuery) -> ListPage:
    """Run the list query and build the page. The statement orders by bundle, so each
    bundle's rows arrive together; they are read by position."""
    limit = clamp_limit(query.limit)
    result = connection.execute(list_statement(Shape.of(query)), parameters(query))
    bundles = [
        listed_bundle_from_metadata(
            pending_id,
            task_id,
            [(row[2], row[3], row[4], _metadata(row[5])) for row in rows],
        )
        for (pending_id, task_id), rows in groupby(result, key=lambda row: (row[0], row[1]))
    ]
    return ListPage(bundles=tuple(bundles[:limit]), has_more=len(bundles) > limit)


def _metadata(value: Any) -> Mapping[str, Any]:
    """A row's decoded metadata as the domain reads it: a JSON object, else empty."""
    if isinstance(value, dict):
        return value
    return dict(value) if isinstance(value, Mapping) else {}
