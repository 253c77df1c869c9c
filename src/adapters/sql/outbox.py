"""Writing the notification outbox, and the events a transition leaves on its rows for it.

A transition that causes a notification event (issue #17) — a create (``answerable``), a
winning claim (``resolved``), an expiry or a cancel — marks the clarification rows it writes,
in its own statement: ``unannounced_events`` carries one bit per event (:data:`EVENT_BITS`).
So the event is durable exactly when the transition is, and the claim records its event while
staying ONE conditional ``UPDATE`` (P1) with no second statement in its transaction (issue
#15: an outbox ``INSERT`` per claim cost a PostgreSQL round trip and five more pages on
SQLite).

The notification store takes the marked events into the outbox (:func:`take_events`) before
it hands out due entries or lists them, and clears the marks in the same transaction. Each
occurrence becomes one entry keyed by :func:`clarion.domain.notifications.event_key`, at the
transition's own time: the bundle's D1 ``created_at`` for ``answerable``, the row's
``updated_at`` (the claim's, the expiry's, the cancel's) for the others. Taking is idempotent —
a key already in the outbox is skipped — so a bundle whose rows are taken in two rounds, or by
two processes at once, still gives each event exactly once.

A row leaving answered/rejected (a restore after a refused delivery) drops its unannounced
``resolved``: a resolution rolled back before anyone took it is never announced. One taken
before the restore is recognised by the worker as rolled back, as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import cache, reduce
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from clarion.adapters.sql.engine import insert_or_skip
from clarion.adapters.sql.metadata_sql import Inline, pending_id_of
from clarion.adapters.sql.schema import messages as m
from clarion.adapters.sql.schema import notification_outbox as outbox
from clarion.domain.notifications import (
    ANSWERABLE,
    CANCELLED_EVENT,
    DUE,
    EXPIRED_EVENT,
    RESOLVED,
    SUPERSEDED_EVENT,
    NewEntry,
    OutboxEntry,
    event_entry,
)

EVENT_BITS: Final = {ANSWERABLE: 1, RESOLVED: 2, EXPIRED_EVENT: 4, CANCELLED_EVENT: 8}
_ALL_BITS: Final = reduce(int.__or__, EVENT_BITS.values())
# Rows taken per round: a backlog is drained over a few rounds, each one short transaction.
TAKE_BATCH: Final = 500


def event_bits(*events: str) -> int:
    """The bits of ``events`` (see :data:`EVENT_BITS`)."""
    return reduce(int.__or__, (EVENT_BITS[event] for event in events), 0)


def marked(add: Any, *, dropping: Iterable[str] = ()) -> ColumnElement[int]:
    """The new ``unannounced_events`` of a row written by a transition: its bits without those
    of ``dropping``, plus ``add`` (a bound parameter or a constant); NULL when none remain."""
    keep = Inline(_ALL_BITS & ~event_bits(*dropping), sa.Integer())
    current = sa.func.coalesce(m.c.unannounced_events, Inline(0, sa.Integer()))
    bits = current.op("&", return_type=sa.Integer())(keep).op("|", return_type=sa.Integer())(add)
    return sa.func.nullif(bits, Inline(0, sa.Integer()))


def events_of(bits: int) -> list[str]:
    """The events whose bits are set, in :data:`EVENT_BITS` order (a bundle's lifecycle)."""
    return [event for event, bit in EVENT_BITS.items() if bits & bit]


# -- the outbox's rows -----------------------------------------------------------------------


def entry_values(entry: NewEntry, entry_id: str, now: datetime) -> dict[str, Any]:
    """The outbox row of a new ``entry`` with id ``entry_id``, recorded at ``now``."""
    return {
        "id": entry_id,
        "pending_id": entry.pending_id,
        "event": entry.event,
        "route_id": entry.route_id,
        "sequence": entry.sequence,
        "status": DUE,
        "due_at": entry.due_at,
        "attempts": 0,
        "idempotency_key": entry.idempotency_key,
        "lease_token": "",
        "locked_until": None,
        "last_error": "",
        "created_at": now,
        "origin_key": entry.origin_key,
    }


def insert_entries(connection: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert outbox rows, skipping any whose idempotency key already exists. The rows go in
    key order, so two transactions inserting overlapping keys wait for each other in one order
    (PostgreSQL) instead of deadlocking."""
    if not rows:
        return
    statement = insert_or_skip(connection, outbox, "idempotency_key")
    connection.execute(statement, sorted(rows, key=lambda row: str(row["idempotency_key"])))


def record_superseded(connection: Connection, pending_ids: Iterable[str], at: datetime) -> None:
    """Issue #30: a ``superseded`` event for each of ``pending_ids``, in the caller's
    transaction — the one starting the turn that closes them. Their rows are not written
    (facts §4.4), so the event goes straight into the outbox (one ``INSERT``, only when a turn
    closes anything)."""
    entries = [event_entry(uuid.uuid4().hex, p, SUPERSEDED_EVENT, at) for p in pending_ids]
    insert_entries(connection, [entry_values(e, e.id, e.created_at) for e in entries])


# -- taking the events the transitions left on their rows ----------------------------------


@cache
def _marked_rows(*, one_bundle: bool, lock: bool = True) -> sa.Select[Any]:
    """Marked rows (of the bundle ``pending_id`` when ``one_bundle``), at most ``limit``, by
    bundle. With ``lock``, on PostgreSQL, the rows are locked, skipping those a transition or
    another taker holds (a later round takes them), so a taker never waits on a row and never
    deadlocks with a transition."""
    pending_id = sa.func.coalesce(m.c.bundle_pending_id, pending_id_of(m))
    statement = sa.select(
        m.c.id,
        pending_id.label("pending_id"),
        m.c.unannounced_events,
        sa.func.coalesce(m.c.bundle_created_at, m.c.created_at).label("created_at"),
        m.c.updated_at,
    ).where(m.c.unannounced_events.is_not(None))
    if one_bundle:
        statement = statement.where(m.c.bundle_pending_id == sa.bindparam("pending_id"))
    statement = statement.order_by(m.c.bundle_pending_id, m.c.id).limit(
        sa.bindparam("limit", type_=sa.Integer())
    )
    return statement.with_for_update(skip_locked=True, of=m) if lock else statement


@cache
def _clear_marks() -> sa.Update:
    ids: Any = sa.bindparam("ids", expanding=True)
    return sa.update(m).where(m.c.id.in_(ids)).values(unannounced_events=None)


def has_marked_rows(connection: Connection, pending_id: str | None) -> bool:
    """Whether any row (of ``pending_id`` when given) still carries events to take."""
    params = {"limit": 1} if pending_id is None else {"limit": 1, "pending_id": pending_id}
    statement = _marked_rows(one_bundle=pending_id is not None, lock=False)
    return connection.execute(statement, params).first() is not None


def take_events(
    connection: Connection, *, pending_id: str | None = None, limit: int = TAKE_BATCH
) -> int:
    """Record the events marked on up to ``limit`` rows (of ``pending_id`` when given) as
    outbox entries and clear the marks, in the caller's write transaction; returns how many
    rows were taken (fewer than ``limit``: none are left, but for rows another transaction
    holds)."""
    params: dict[str, Any] = {"limit": limit}
    if pending_id is not None:
        params["pending_id"] = pending_id
    rows = connection.execute(_marked_rows(one_bundle=pending_id is not None), params).all()
    if not rows:
        return 0
    entries: dict[str, OutboxEntry] = {}
    for row in rows:
        for event in events_of(row.unannounced_events):
            at = row.created_at if event == ANSWERABLE else row.updated_at
            entry = event_entry(uuid.uuid4().hex, row.pending_id, event, at)
            entries.setdefault(entry.idempotency_key, entry)
    insert_entries(connection, [entry_values(e, e.id, e.created_at) for e in entries.values()])
    connection.execute(_clear_marks(), {"ids": [row.id for row in rows]})
    return len(rows)


__all__ = [
    "EVENT_BITS",
    "TAKE_BATCH",
    "entry_values",
    "event_bits",
    "events_of",
    "has_marked_rows",
    "insert_entries",
    "marked",
    "record_superseded",
    "take_events",
]
