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

Issue #30, ``include_closed``: the page is the ``UNION ALL`` of four walks, each newest first
and stopped after ``limit + 1`` bundles, merged by (time, pending id) and cut to
``limit + 1`` (the rule they implement is :func:`clarion.domain.history.closed_reason`)::

    resolved   as above
    ended      expired/cancelled rows through ix_task_session_messages_ended_order (the
               newest of its bundle); reason "cancelled", else "session_ended" when the
               session is terminal since no later than the expiry, else "expired"
    superseded turns through ix_task_session_turns_started, newest start first; each turn's
               predecessor (one probe of ix_task_session_turns_current) and its pending rows
               (ix_task_session_messages_pending_rows): closed when the turn started
    ended sessions through ix_task_sessions_ended (terminal states, by updated_at); pending
               rows on their current turn (no expiry written): closed when the state changed

A closed bundle is well formed and has no answered, rejected or in-delivery row, exactly as
the in-memory reference decides.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from clarion.adapters.sql.listing import page_parameters, page_with_rows
from clarion.adapters.sql.metadata_sql import (
    Bytewise,
    const,
    is_clarification,
    is_delivery_pending,
    is_ended,
    is_pendingish,
    is_resolved,
    status_of,
)
from clarion.adapters.sql.predicates import bundle_is_well_formed, current_turn_id
from clarion.adapters.sql.records import MESSAGE_COLUMNS, message_record_at
from clarion.adapters.sql.schema import (
    messages,
    session_has_ended,
    task_session_turns,
    task_sessions,
)
from clarion.adapters.sql.types import UtcDateTime
from clarion.adapters.sql.visibility import (
    Seen,
    absent,
    bundle_key,
    keyed_task_id,
    no_bundle_row,
    task_is_visible,
)
from clarion.domain.history import (
    CANCELLED_REASON,
    EXPIRED_REASON,
    SESSION_ENDED,
    SUPERSEDED,
    HistoryEntry,
    ResolvedPage,
    ResolvedQuery,
    SessionFacts,
    as_closed_reason,
    closed_bundle_at,
    resolved_bundle,
)
from clarion.domain.listing import clamp_limit
from clarion.domain.model import CANCELLED, is_terminal_state
from clarion.domain.rows import ClarificationRow, parse_row


@attrs.frozen
class Shape:
    """Which optional predicates a resolved-list query carries (one cached statement each)."""

    seen: Seen  # L1a–L1c, the pending list's visibility
    since: bool  # resolved_since
    before: bool  # the cursor
    closed: bool = False  # issue #30: the closed bundles too

    @classmethod
    def of(cls, query: ResolvedQuery) -> Shape:
        return cls(
            seen=Seen.of(query.visibility),
            since=query.resolved_since is not None,
            before=query.before is not None,
            closed=query.include_closed,
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


def _newest_row(head: sa.FromClause, status: Callable[[sa.FromClause], Any]) -> Any:
    """No row of the same bundle with ``status`` (resolved, or ended) comes after ``head`` by
    (``updated_at``, ``id``): the head is the bundle's newest such row."""
    later = messages.alias("later")
    return absent(
        head,
        later,
        later.c.bundle_pending_id == head.c.bundle_pending_id,  # only that bundle's rows
        is_clarification(later),
        status(later),
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


def _positioned(
    statement: sa.Select[Any], shape: Shape, at: Any, pending_id: Any
) -> sa.Select[Any]:
    """``statement`` at/after ``resolved_since``, strictly before the cursor, newest first,
    ``page_limit`` bundles."""
    if shape.since:
        statement = statement.where(at >= _stamp("resolved_since"))
    if shape.before:  # strictly before the cursor; the <= bounds the index range
        before_at = _stamp("before_at")
        statement = statement.where(
            at <= before_at,
            sa.or_(at < before_at, pending_id < sa.bindparam("before_id", type_=sa.Text())),
        )
    page_limit = sa.bindparam("page_limit", type_=sa.Integer())
    return statement.order_by(at.desc(), pending_id.desc()).limit(page_limit)


def _per_head(accepted: Any) -> Any:
    """Every test beyond the walked index's own terms, judged per head visited (see
    clarion.adapters.sql.listing)."""
    return sa.case((accepted, sa.true()), else_=sa.false())


def _no_reason() -> Any:
    return sa.cast(sa.null(), sa.Text()).label("reason")


def _page_statement(shape: Shape) -> sa.Select[Any]:
    head = messages.alias("head")
    resolved_at = head.c.updated_at
    pending_id = head.c.bundle_pending_id
    bundle_task_id = keyed_task_id(head)
    accepted = sa.and_(
        _newest_row(head, is_resolved),
        _settled(head),
        task_is_visible(shape.seen, head, bundle_task_id),
    )
    statement = sa.select(
        pending_id.label("pending_id"),
        bundle_task_id.label("task_id"),
        resolved_at.label("resolved_at"),
        _no_reason(),
    ).where(
        # The partial index's own terms, so both databases walk it ...
        is_clarification(head),
        is_resolved(head),
        pending_id.is_not(None),
        # ... and every other test per head visited.
        _per_head(accepted),
    )
    return _positioned(statement, shape, resolved_at, pending_id)


def _unanswered(head: sa.FromClause, *, ended: bool) -> Any:
    """The head's bundle is well formed and has no answered, rejected or in-delivery row
    (nor, for a pending head, an expired or cancelled one: those closed it first)."""
    key = bundle_key(head)
    terms = [
        no_bundle_row(head, "answered", is_resolved, key),
        no_bundle_row(head, "marked", is_delivery_pending, key),
        bundle_is_well_formed(head, key),
    ]
    if not ended:
        terms.append(no_bundle_row(head, "ended", is_ended, key))
    return sa.and_(*terms)


def _ended_statement(shape: Shape) -> sa.Select[Any]:
    """Expired and cancelled bundles, at their ended rows' write."""
    head = messages.alias("head")
    ended_at = head.c.updated_at
    pending_id = head.c.bundle_pending_id
    bundle_task_id = keyed_task_id(head)
    session = task_sessions.alias("ended_session")
    ended_first = sa.exists().where(
        session.c.id == head.c.task_session_id,
        session_has_ended(session),
        session.c.updated_at <= head.c.updated_at,
    )
    reason = sa.case(
        (status_of(head) == const(CANCELLED), const(CANCELLED_REASON)),
        (ended_first, const(SESSION_ENDED)),
        else_=const(EXPIRED_REASON),
    )
    accepted = sa.and_(
        _newest_row(head, is_ended),
        _unanswered(head, ended=True),
        task_is_visible(shape.seen, head, bundle_task_id),
    )
    statement = sa.select(
        pending_id.label("pending_id"),
        bundle_task_id.label("task_id"),
        ended_at.label("resolved_at"),
        reason.label("reason"),
    ).where(
        is_clarification(head),
        is_ended(head),
        pending_id.is_not(None),
        _per_head(accepted),
    )
    return _positioned(statement, shape, ended_at, pending_id)


def _first_pending_on_turn(head: sa.FromClause) -> Any:
    """One head per bundle: no pending row of it on the head's turn has a smaller id."""
    earlier = messages.alias("earlier")
    return absent(
        head,
        earlier,
        earlier.c.task_session_id == head.c.task_session_id,
        earlier.c.turn_id == head.c.turn_id,
        earlier.c.bundle_pending_id == head.c.bundle_pending_id,
        is_clarification(earlier),
        is_pendingish(earlier),
        earlier.c.id < head.c.id,
    )


def _pending_head(shape: Shape, head: sa.FromClause) -> tuple[Any, Any]:
    """The task id and the acceptance test of a pending head of a closed bundle."""
    bundle_task_id = keyed_task_id(head)
    accepted = sa.and_(
        _first_pending_on_turn(head),
        _unanswered(head, ended=False),
        task_is_visible(shape.seen, head, bundle_task_id),
    )
    return bundle_task_id, accepted


def _superseded_statement(shape: Shape) -> sa.Select[Any]:
    """Pending bundles of the turn before each turn, closed when that turn started."""
    turn = task_session_turns.alias("newer")
    older = task_session_turns.alias("older")
    head = messages.alias("head")
    previous = (
        sa.select(older.c.id)
        .where(
            older.c.task_session_id == turn.c.task_session_id,
            sa.tuple_(older.c.started_at, older.c.created_at, older.c.id)
            < sa.tuple_(turn.c.started_at, turn.c.created_at, turn.c.id),
        )
        .order_by(older.c.started_at.desc(), older.c.created_at.desc(), older.c.id.desc())
        .limit(1)
        .correlate(turn)
        .scalar_subquery()
    )
    return _closed_pending_heads(
        shape,
        SUPERSEDED,
        turn.c.started_at,
        turn,
        head,
        sa.and_(head.c.task_session_id == turn.c.task_session_id, head.c.turn_id == previous),
    )


def _session_ended_statement(shape: Shape) -> sa.Select[Any]:
    """Pending bundles on the current turn of a terminal session (no expiry written), closed
    when the session's state changed."""
    session = task_sessions.alias("ended")
    head = messages.alias("head")
    return _closed_pending_heads(
        shape,
        SESSION_ENDED,
        session.c.updated_at,
        session,
        head,
        sa.and_(
            head.c.task_session_id == session.c.id,
            head.c.turn_id == current_turn_id(session.c.id),
        ),
        session_has_ended(session),
    )


def _closed_pending_heads(
    shape: Shape,
    reason: str,
    resolved_at: Any,
    source: sa.FromClause,
    head: sa.FromClause,
    on: sa.ColumnElement[bool],
    *where: sa.ColumnElement[bool],
) -> sa.Select[Any]:
    """The pending heads of bundles closed for ``reason`` at ``resolved_at``: ``head`` joined
    to ``source`` ``on``, filtered by ``where`` too, positioned for the page."""
    pending_id = head.c.bundle_pending_id
    bundle_task_id, accepted = _pending_head(shape, head)
    statement = (
        sa.select(
            pending_id.label("pending_id"),
            bundle_task_id.label("task_id"),
            resolved_at.label("resolved_at"),
            const(reason).label("reason"),
        )
        .select_from(source)
        .join(head, on)
        .where(
            *where,
            is_clarification(head),
            is_pendingish(head),
            pending_id.is_not(None),
            _per_head(accepted),
        )
    )
    return _positioned(statement, shape, resolved_at, pending_id)


def _history_statement(shape: Shape) -> sa.Select[Any]:
    """The resolved page, or with ``shape.closed`` the merged page of the four walks."""
    resolved = _page_statement(shape)
    if not shape.closed:
        return resolved
    walks = (
        resolved,
        _ended_statement(shape),
        _superseded_statement(shape),
        _session_ended_statement(shape),
    )
    merged = sa.union_all(*(walk.subquery().select() for walk in walks)).subquery("walks")
    page_limit = sa.bindparam("page_limit", type_=sa.Integer())
    return (
        sa.select(merged)
        .order_by(merged.c.resolved_at.desc(), Bytewise(merged.c.pending_id).desc())
        .limit(page_limit)
    )


@cache
def resolved_statement(shape: Shape) -> sa.Select[Any]:
    """The page of bundles (``limit + 1``) joined to their clarification rows: each row is
    (pending id, task id, time, reason, *MESSAGE_COLUMNS)."""
    page = _history_statement(shape).subquery("page")
    return page_with_rows(
        page,
        (page.c.resolved_at, page.c.reason, *MESSAGE_COLUMNS),
        page.c.resolved_at.desc(),
        Bytewise(page.c.pending_id).desc(),
        messages.c.id,
    )


def list_resolved_bundles(connection: Connection, query: ResolvedQuery) -> ResolvedPage:
    """Run the resolved-list query and build the page."""
    limit = clamp_limit(query.limit)
    grouped: dict[str, tuple[str, str | None, datetime, list[ClarificationRow]]] = {}
    for row in connection.execute(resolved_statement(Shape.of(query)), _parameters(query)):
        entry = grouped.get(row[0])
        if entry is None:
            entry = grouped[row[0]] = (row[1], row[3], row[2], [])
        entry[3].append(parse_row(message_record_at(row, 4)))
    bundles: list[HistoryEntry] = []
    for pending_id, (task_id, reason, at, rows) in grouped.items():
        found: HistoryEntry | None
        if reason is None:
            found = resolved_bundle(pending_id, task_id, rows)
        else:
            found = closed_bundle_at(pending_id, task_id, rows, as_closed_reason(reason), at)
        if found is not None:
            bundles.append(found)
    return ResolvedPage(bundles=tuple(bundles[:limit]), has_more=len(bundles) > limit)


@cache
def _session_state() -> sa.Select[Any]:
    """The session's state and when it last changed, by primary key (``session_id``)."""
    return sa.select(task_sessions.c.state, task_sessions.c.updated_at).where(
        task_sessions.c.id == sa.bindparam("session_id")
    )


@cache
def _next_turn_start() -> sa.Select[Any]:
    """When the turn after ``turn_id`` in ``session_id`` started (one probe of
    ``ix_task_session_turns_current``)."""
    turn = task_session_turns.alias("turn")
    newer = task_session_turns.alias("newer")
    return (
        sa.select(newer.c.started_at)
        .select_from(newer.join(turn, turn.c.id == sa.bindparam("turn_id")))
        .where(
            newer.c.task_session_id == sa.bindparam("session_id"),
            sa.tuple_(newer.c.started_at, newer.c.created_at, newer.c.id)
            > sa.tuple_(turn.c.started_at, turn.c.created_at, turn.c.id),
        )
        .order_by(newer.c.started_at, newer.c.created_at, newer.c.id)
        .limit(1)
    )


def session_facts(connection: Connection, session_id: str, turn_id: str) -> SessionFacts:
    """The session's terminal state (and since when) and the start of the turn after
    ``turn_id`` (:class:`SessionFacts`): two probes by primary key and one of
    ``ix_task_session_turns_current``. The statements are built once (issue #35: building
    and keying them cost more CPU than running them, on every ``tasks/get`` and re-read)."""
    session = connection.execute(_session_state(), {"session_id": session_id}).first()
    following = connection.execute(
        _next_turn_start(), {"session_id": session_id, "turn_id": turn_id}
    ).scalar()
    return SessionFacts(
        terminal=session is not None and is_terminal_state(session.state),
        state_changed_at=session.updated_at if session is not None else None,
        next_turn_started_at=following,
    )
