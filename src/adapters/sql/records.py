"""Explicit row → domain functions and the statements the SQL repositories share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from types import MappingProxyType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.sql.elements import ColumnElement

from clarion.adapters.sql.predicates import current_turn_id
from clarion.adapters.sql.schema import messages, task_session_turns, task_sessions
from clarion.domain.host import Session, Turn
from clarion.domain.rows import MessageRecord

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
    )


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
    }


def insert_messages(connection: Connection, records: Sequence[MessageRecord]) -> None:
    if records:
        connection.execute(sa.insert(messages), [message_values(r) for r in records])


def session_from_row(row: RowMapping) -> Session:
    return Session(
        id=row["id"],
        task_id=row["task_id"],
        state=row["state"],
        is_primary=bool(row["is_primary"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        agent_token_hash=row["agent_token_hash"],
    )


def turn_from_row(row: RowMapping) -> Turn:
    return Turn(
        id=row["id"],
        session_id=row["task_session_id"],
        started_at=row["started_at"],
        created_at=row["created_at"],
        completed_at=row["completed_at"],
    )


@cache
def _session_by_id() -> sa.Select[Any]:
    return sa.select(task_sessions).where(task_sessions.c.id == sa.bindparam("session_id"))


@cache
def _current_turn() -> sa.Select[Any]:
    current = current_turn_id(sa.bindparam("session_id", type_=task_sessions.c.id.type))
    return sa.select(task_session_turns).where(task_session_turns.c.id == current)


def load_session(connection: Connection, session_id: str) -> Session | None:
    found = connection.execute(_session_by_id(), {"session_id": session_id}).mappings().first()
    return session_from_row(found) if found is not None else None


def load_current_turn(connection: Connection, session_id: str) -> Turn | None:
    found = connection.execute(_current_turn(), {"session_id": session_id}).mappings().first()
    return turn_from_row(found) if found is not None else None


def insert_turn(connection: Connection, *, turn_id: str, session: Session, now: datetime) -> Turn:
    """A new turn of ``session`` starting at ``now`` (it becomes the current turn)."""
    connection.execute(
        sa.insert(task_session_turns).values(
            id=turn_id,
            task_session_id=session.id,
            task_id=session.task_id,
            started_at=now,
            completed_at=None,
            created_at=now,
            updated_at=now,
        )
    )
    return Turn(id=turn_id, session_id=session.id, started_at=now, created_at=now)
