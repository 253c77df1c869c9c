"""The bundle-key backfill of migrations 0003 and 0010, frozen from ``sql/records.py`` at
revision 0016_closed_history (see :mod:`clarion.adapters.sql.migrations.frozen`; never edit).

The keys are computed with the domain's reading of a stored row (``parse_row``, the question
digest), the reading the repositories use when they insert, so backfilled rows and new rows
carry the same keys.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from itertools import groupby
from types import MappingProxyType
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from clarion.adapters.sql.migrations.frozen.metadata import (
    CLARIFICATION_REQUEST,
    is_clarification,
    pending_id_of,
)
from clarion.domain.questions import questions_digest
from clarion.domain.resolved_by import stored_resolver
from clarion.domain.rows import (
    Asker,
    MessageRecord,
    bundle_questions,
    parse_row,
    resolve_task_id,
)


class BundleKeys(NamedTuple):
    """What a clarification row carries of its whole bundle (the ``bundle_*`` columns)."""

    created_at: datetime
    pending_id: str
    digest: str
    task_id: str
    complete: bool


def _message_record(row: RowMapping) -> MessageRecord:
    metadata = row["metadata"]
    user_id, via = row.get("asker_id"), row.get("asker_via")
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
        asker=None if user_id is None or via is None else Asker(user_id=user_id, via=via),
        resolved_by=stored_resolver(
            row.get("resolver_id"),
            row.get("resolver_kind"),
            row.get("resolver_name"),
            row.get("resolver_surface"),
        ),
    )


def _bundle_pending_id(record: MessageRecord) -> str:
    return parse_row(record).pending_id if record.type == CLARIFICATION_REQUEST else ""


def _bundle_keys(records: Sequence[MessageRecord]) -> dict[str, BundleKeys]:
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


def bundles_of(
    connection: Connection, table: sa.TableClause, batch: int
) -> Iterator[list[tuple[MessageRecord, BundleKeys]]]:
    """Every clarification row of ``table`` (a table clause of the columns its revision
    knows) that carries a pending id, one bundle at a time with its keys, streamed ``batch``
    rows at a time."""
    pending_id = pending_id_of(table)
    rows = connection.execute(
        sa.select(table, pending_id.label("bundle_key"))
        .where(is_clarification(table), pending_id.is_not(None))
        .order_by(pending_id, table.c.id)
        .execution_options(yield_per=batch)
    ).mappings()
    for _, group in groupby(rows, key=lambda row: row["bundle_key"]):
        records = [_message_record(row) for row in group]
        keys = _bundle_keys(records)
        yield [(r, keys[p]) for r in records if (p := _bundle_pending_id(r)) in keys]


def execute_in_batches(
    connection: Connection, statement: sa.Update, values: Sequence[dict[str, Any]], batch: int
) -> None:
    """``statement`` for each of ``values``, ``batch`` at a time (one executemany each)."""
    for start in range(0, len(values), batch):
        connection.execute(statement, values[start : start + batch])
