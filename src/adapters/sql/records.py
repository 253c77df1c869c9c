"""Explicit row → domain functions and the statements the SQL repositories share."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from datetime import datetime
from functools import cache
from itertools import groupby
from types import MappingProxyType
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.sql.elements import ColumnElement

from clarion.adapters.sql.predicates import current_turn_id, is_clarification, pending_id_of
from clarion.adapters.sql.rows import from_row
from clarion.adapters.sql.schema import messages, task_session_turns, task_sessions
from clarion.domain.host import Session, Turn
from clarion.domain.model import CLARIFICATION_REQUEST
from clarion.domain.questions import questions_digest
from clarion.domain.resolved_by import ResolvedBy, stored_resolver
from clarion.domain.rows import (
    Asker,
    MessageRecord,
    bundle_questions,
    parse_row,
    resolve_task_id,
)

MESSAGE_COLUMNS = (
    messages.c.id,
    messages.c.task_session_id,
    messages.c.task_id,
    messages.c.turn_id,
    messages.c.type,
    messages.c.metadata,
    messages.c.created_at,
    messages.c.updated_at,
    messages.c.author_type,
    messages.c.content,
    messages.c.asker_id,
    messages.c.asker_via,
    messages.c.resolver_id,
    messages.c.resolver_kind,
    messages.c.resolver_name,
    messages.c.resolver_surface,
)


def message_record(row: RowMapping) -> MessageRecord:
    """A stored message; its metadata is a read-only view of a private copy."""
    metadata = row["metadata"]
    return MessageRecord(
        id=row["id"],
        session_id=row["task_session_id"],
        task_id=row["task_id"],
        turn_id=row["turn_id"],
        type=row["type"],
        metadata=MappingProxyType(dict(metadata) if isinstance(metadata, Mapping) else {}),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        author_type=row["author_type"],
        content=row["content"],
        asker=_asker(row),
        resolved_by=stored_resolver(
            row.get("resolver_id"),
            row.get("resolver_kind"),
            row.get("resolver_name"),
            row.get("resolver_surface"),
        ),
    )


def message_record_at(row: Sequence[Any], start: int = 0) -> MessageRecord:
    """:func:`message_record` for a positional row whose :data:`MESSAGE_COLUMNS` begin at
    ``start`` (the list page's path: no lookups by name). The metadata object the driver has
    just decoded is this row's own, so it is wrapped read-only without a copy."""
    (
        message_id,
        session_id,
        task_id,
        turn_id,
        message_type,
        metadata,
        created_at,
        updated_at,
        author_type,
        content,
        asker_id,
        asker_via,
        resolver_id,
        resolver_kind,
        resolver_name,
        resolver_surface,
    ) = row[start : start + len(MESSAGE_COLUMNS)]
    if not isinstance(metadata, dict):
        metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
    return MessageRecord(
        id=message_id,
        session_id=session_id,
        task_id=task_id,
        turn_id=turn_id,
        type=message_type,
        metadata=MappingProxyType(metadata),
        created_at=created_at,
        updated_at=updated_at,
        author_type=author_type,
        content=content,
        asker=None
        if asker_id is None or asker_via is None
        else Asker(user_id=asker_id, via=asker_via),
        resolved_by=stored_resolver(resolver_id, resolver_kind, resolver_name, resolver_surface),
    )


def _asker(row: RowMapping) -> Asker | None:
    """The stored asker; None when absent (rows stored before migration 0004, other rows, or
    a reader of the table as an older migration knew it)."""
    user_id, via = row.get("asker_id"), row.get("asker_via")
    if user_id is None or via is None:
        return None
    return Asker(user_id=user_id, via=via)


def select_messages(connection: Connection, *where: ColumnElement[bool]) -> list[MessageRecord]:
    """Messages matching ``where``, by ``created_at``, ``id`` (creation order)."""
    statement = (
        sa.select(*MESSAGE_COLUMNS).where(*where).order_by(messages.c.created_at, messages.c.id)
    )
    return [message_record(row) for row in connection.execute(statement).mappings()]


def message_values(record: MessageRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "task_session_id": record.session_id,
        "task_id": record.task_id,
        "turn_id": record.turn_id,
        "author_type": record.author_type,
        "content": record.content,
        "type": record.type,
        "metadata": dict(record.metadata),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "asker_id": None if record.asker is None else record.asker.user_id,
        "asker_via": None if record.asker is None else record.asker.via,
        **resolver_values(record.resolved_by),
    }


def resolver_values(resolved_by: ResolvedBy | None) -> dict[str, str | None]:
    """The ``resolver_*`` columns of a record (all NULL when none is stored)."""
    if resolved_by is None:
        return dict.fromkeys(RESOLVER_COLUMNS)
    return {
        "resolver_id": resolved_by.identity_id,
        "resolver_kind": resolved_by.kind.value,
        "resolver_name": resolved_by.display_name,
        "resolver_surface": resolved_by.surface.value,
    }


RESOLVER_COLUMNS = ("resolver_id", "resolver_kind", "resolver_name", "resolver_surface")


# -- the derived bundle keys (schema: bundle_created_at … bundle_complete) --------------------


class BundleKeys(NamedTuple):
    """What a clarification row carries of its whole bundle (the ``bundle_*`` columns):
    facts of the bundle's set of clarification rows, which only an insert or a delete of one
    of them changes (no update rewrites a row's ``created_at``, ``task_id`` or question)."""

    created_at: datetime  # D1: the minimum created_at of the rows
    pending_id: str
    digest: str  # of the question set (domain.questions_digest): create's deduplication
    task_id: str  # M5 from the rows: the smallest non-empty row task id, "" when none has one
    complete: bool  # L16: every row has a question id


def _bundle_pending_id(record: MessageRecord) -> str:
    """The pending id a clarification row belongs to as the domain reads it; "" for other
    rows (they carry no keys)."""
    return parse_row(record).pending_id if record.type == CLARIFICATION_REQUEST else ""


def bundle_keys(records: Sequence[MessageRecord]) -> dict[str, BundleKeys]:
    """Per pending id, the keys of the bundle that ``records`` (all its clarification rows)
    make."""
    groups: dict[str, list[MessageRecord]] = defaultdict(list)
    for record in records:
        if pending_id := _bundle_pending_id(record):
            groups[pending_id].append(record)
    keys: dict[str, BundleKeys] = {}
    for pending_id, group in groups.items():
        rows = [parse_row(record) for record in group]
        keys[pending_id] = BundleKeys(
            created_at=min(record.created_at for record in group),
            pending_id=pending_id,
            digest=questions_digest(bundle_questions(rows)),
            task_id=resolve_task_id((row.task_id for row in rows), None),
            complete=all(row.question_id for row in rows),
        )
    return keys


KEY_COLUMNS = (
    messages.c.bundle_created_at,
    messages.c.bundle_pending_id,
    messages.c.bundle_digest,
    messages.c.bundle_task_id,
    messages.c.bundle_complete,
)


@cache
def _rows_of_bundles() -> sa.Select[Any]:
    return sa.select(*MESSAGE_COLUMNS, *KEY_COLUMNS).where(
        is_clarification(messages),
        pending_id_of(messages).in_(sa.bindparam("pending_ids", expanding=True)),
    )


@cache
def _set_keys() -> sa.Update:
    return (
        sa.update(messages)
        .where(messages.c.id == sa.bindparam("row_id"))
        .values(
            {
                column: sa.bindparam(f"new_{column.name}", type_=column.type)
                for column in KEY_COLUMNS
            }
        )
    )


def key_values(keys: BundleKeys | None) -> dict[str, Any]:
    """The ``bundle_*`` column values of a row with ``keys`` (all NULL without)."""
    if keys is None:
        return dict.fromkeys((column.name for column in KEY_COLUMNS), None)
    return {column.name: value for column, value in zip(KEY_COLUMNS, keys, strict=True)}


def bundles_of(
    connection: Connection, table: sa.TableClause, batch: int
) -> Iterator[list[tuple[MessageRecord, BundleKeys]]]:
    """A backfilling migration's read: every clarification row of ``table`` (a table clause of
    the columns its revision knows) that carries a pending id, one bundle at a time with the
    keys :func:`bundle_keys` gives it, streamed ``batch`` rows at a time."""
    pending_id = pending_id_of(table)
    rows = connection.execute(
        sa.select(table, pending_id.label("bundle_key"))
        .where(is_clarification(table), pending_id.is_not(None))
        .order_by(pending_id, table.c.id)
        .execution_options(yield_per=batch)
    ).mappings()
    for _, group in groupby(rows, key=lambda row: row["bundle_key"]):
        records = [message_record(row) for row in group]
        keys = bundle_keys(records)
        yield [(r, keys[p]) for r in records if (p := _bundle_pending_id(r)) in keys]


def execute_in_batches(
    connection: Connection, statement: sa.Update, values: Sequence[dict[str, Any]], batch: int
) -> None:
    """``statement`` for each of ``values``, ``batch`` at a time (one executemany each)."""
    for start in range(0, len(values), batch):
        connection.execute(statement, values[start : start + batch])


def _stored_rows(
    connection: Connection, pending_ids: Collection[str]
) -> list[tuple[MessageRecord, BundleKeys | None]]:
    if not pending_ids:
        return []
    result = connection.execute(_rows_of_bundles(), {"pending_ids": sorted(pending_ids)})
    stored = []
    for row in result.mappings():
        record = message_record(row)
        if _bundle_pending_id(record) in pending_ids:
            created_at, pending_id, digest, task_id, complete = (
                row[column.name] for column in KEY_COLUMNS
            )
            current = (
                BundleKeys(created_at, pending_id, digest, task_id, bool(complete))
                if created_at is not None and complete is not None
                else None
            )
            stored.append((record, current))
    return stored


def _rewrite_keys(
    connection: Connection,
    stored: Sequence[tuple[MessageRecord, BundleKeys | None]],
    keys: Mapping[str, BundleKeys],
) -> None:
    """Write ``keys`` to the stored rows whose keys differ (one executemany, often empty)."""
    changes = []
    for record, current in stored:
        wanted = keys.get(_bundle_pending_id(record))
        if wanted is not None and current != wanted:
            values = {f"new_{name}": value for name, value in key_values(wanted).items()}
            changes.append({"row_id": record.id, **values})
    if changes:
        connection.execute(_set_keys(), changes)


def insert_messages(
    connection: Connection, records: Sequence[MessageRecord], *, unannounced: int = 0
) -> None:
    """Insert ``records`` with their bundle keys, and bring the keys of the other rows of the
    same pending ids up to date: one indexed read by pending id (nothing found for a new
    bundle), the insert, and an update only when an inserted row changes an existing bundle.
    The clarification rows carry the notification events ``unannounced`` (bits of
    :data:`clarion.adapters.sql.outbox.EVENT_BITS`; 0 for none)."""
    if not records:
        return
    pending_ids = {p for p in map(_bundle_pending_id, records) if p}
    stored = _stored_rows(connection, pending_ids)
    keys = bundle_keys([record for record, _ in stored] + list(records))
    values = []
    for record in records:
        bundle = keys.get(_bundle_pending_id(record))
        values.append(
            {
                **message_values(record),
                **key_values(bundle),
                "unannounced_events": unannounced if bundle is not None and unannounced else None,
            }
        )
    connection.execute(_insert_messages(), values)
    _rewrite_keys(connection, stored, keys)


@cache
def _insert_messages() -> sa.Insert:
    """The message insert, built once: its values travel as parameters (issue #35)."""
    return sa.insert(messages)


def refresh_bundle_keys(connection: Connection, pending_ids: Collection[str]) -> None:
    """Recompute the keys of every row of ``pending_ids`` (after rows of them were deleted)."""
    stored = _stored_rows(connection, set(pending_ids))
    _rewrite_keys(connection, stored, bundle_keys([record for record, _ in stored]))


def bundle_pending_ids(records: Sequence[MessageRecord]) -> set[str]:
    """The pending ids whose bundles ``records`` belong to."""
    return {p for p in map(_bundle_pending_id, records) if p}


def session_from_row(row: RowMapping) -> Session:
    return from_row(Session, row, is_primary=bool(row["is_primary"]))


def turn_from_row(row: RowMapping) -> Turn:
    return from_row(Turn, row, session_id=row["task_session_id"])


@cache
def _session_by_id() -> sa.Select[Any]:
    return sa.select(task_sessions).where(task_sessions.c.id == sa.bindparam("session_id"))


@cache
def _current_turn() -> sa.Select[Any]:
    current = current_turn_id(sa.bindparam("session_id", type_=task_sessions.c.id.type))
    return sa.select(task_session_turns).where(task_session_turns.c.id == current)


def update_session_state(
    connection: Connection,
    session_id: str,
    state: str,
    now: datetime,
    expected: Collection[str] | None = None,
) -> Session | None:
    """Set a session's state (and ``updated_at``), when ``expected`` is given only if its
    current state is in it: ONE conditional ``UPDATE … RETURNING``, whose condition decides —
    no row back means the session is missing or in another state (nothing written). The
    caller holds the session's lock (:func:`clarion.adapters.sql.locks.lock_sessions`)."""
    params: dict[str, Any] = {"session_id": session_id, "state": state, "now": now}
    if expected is not None:
        params["expected"] = sorted(expected)
    statement = _set_session_state(conditional=expected is not None)
    row = connection.execute(statement, params).mappings().first()
    return session_from_row(row) if row is not None else None


@cache
def _set_session_state(*, conditional: bool) -> sa.Update:
    condition = task_sessions.c.id == sa.bindparam("session_id", type_=task_sessions.c.id.type)
    if conditional:
        expected = sa.bindparam("expected", expanding=True, type_=task_sessions.c.state.type)
        condition = sa.and_(condition, task_sessions.c.state.in_(expected))
    return (
        sa.update(task_sessions)
        .where(condition)
        .values(
            state=sa.bindparam("state", type_=task_sessions.c.state.type),
            updated_at=sa.bindparam("now", type_=task_sessions.c.updated_at.type),
        )
        .returning(*task_sessions.c)
    )


def load_session(connection: Connection, session_id: str) -> Session | None:
    found = connection.execute(_session_by_id(), {"session_id": session_id}).mappings().first()
    return session_from_row(found) if found is not None else None


def load_current_turn(connection: Connection, session_id: str) -> Turn | None:
    found = connection.execute(_current_turn(), {"session_id": session_id}).mappings().first()
    return turn_from_row(found) if found is not None else None


def insert_turn(connection: Connection, *, turn_id: str, session: Session, now: datetime) -> Turn:
    """A new turn of ``session`` starting at ``now`` (it becomes the current turn)."""
    values = {
        "id": turn_id,
        "task_session_id": session.id,
        "task_id": session.task_id,
        "started_at": now,
        "completed_at": None,
        "created_at": now,
        "updated_at": now,
    }
    connection.execute(_insert_turn(), values)
    return Turn(id=turn_id, session_id=session.id, started_at=now, created_at=now)


@cache
def _insert_turn() -> sa.Insert:
    """:func:`insert_turn`'s statement, built once with its values as parameters (issue #35:
    building ``.values(...)`` and cache-keying it cost about 0.4 ms of CPU on every resume)."""
    return sa.insert(task_session_turns)
