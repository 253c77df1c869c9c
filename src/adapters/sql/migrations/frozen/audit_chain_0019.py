"""The audit chain's backfill (issue #34, migration 0019_audit_chain), written for that revision
(see :mod:`clarion.adapters.sql.migrations.frozen`; never edit).

Every bundle already resolved when the migration runs gets one record, in resolution order
(the newest ``updated_at`` of its resolved rows, then pending id), in the chain of its M5
task's workspace — the record a claim made today would write, marked ``"backfilled": true``
(its resolver reads "unknown" when none was recorded). The link is this revision's own copy
of the hash: ``sha256(prev_hash || body)`` over UTF-8, lowercase hex, the first record of a
scope linking to 64 zeros; the body is canonical JSON (sorted keys, no spaces, UTF-8).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from clarion.adapters.sql.migrations.frozen.bundles import _message_record
from clarion.adapters.sql.migrations.frozen.metadata import is_clarification, is_resolved
from clarion.domain.rows import ClarificationRow, parse_row, resolve_task_id

GENESIS: Final = "0" * 64
BATCH: Final = 500


def _canonical(value: Mapping[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _link(prev_hash: str, body: str) -> str:
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


def _body(pending_id: str, rows: Sequence[ClarificationRow], metadata: Sequence[Any]) -> str:
    resolved = [(row, meta) for row, meta in zip(rows, metadata, strict=True) if row.is_resolved]
    first = resolved[0][0]
    who = first.resolved_by
    responses = {
        row.question_id: dict(meta["response"])
        for row, meta in resolved
        if isinstance(meta, Mapping) and isinstance(meta.get("response"), Mapping)
    }
    at = max(row.updated_at for row, _ in resolved).astimezone(UTC)
    return _canonical(
        {
            "v": 1,
            "event": "resolved",
            "backfilled": True,
            "pending_id": pending_id,
            "status": first.status,
            "responses": responses,
            "resolved_by": {
                "identity_id": who.identity_id if who else "",
                "kind": who.kind.value if who else "unknown",
                "display_name": who.display_name if who else "",
                "surface": who.surface.value if who else "unknown",
            },
            "at": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
    )


def _resolved_order(connection: Connection, messages: sa.TableClause) -> list[str]:
    """The resolved bundles' pending ids in resolution order."""
    resolved_at = sa.func.max(messages.c.updated_at)
    statement = (
        sa.select(messages.c.bundle_pending_id)
        .where(is_clarification(messages), is_resolved(messages))
        .where(messages.c.bundle_pending_id.is_not(None), messages.c.bundle_pending_id != "")
        .group_by(messages.c.bundle_pending_id)
        .order_by(resolved_at, messages.c.bundle_pending_id)
    )
    return [str(pending_id) for pending_id in connection.execute(statement).scalars()]


def _bundles(
    connection: Connection, messages: sa.TableClause, order: list[str]
) -> Iterator[tuple[str, list[ClarificationRow], list[Any], str]]:
    """(pending id, rows, their metadata, the session id) in ``order``, ``BATCH`` at a time."""
    for start in range(0, len(order), BATCH):
        wanted = order[start : start + BATCH]
        found = connection.execute(
            sa.select(messages)
            .where(is_clarification(messages), messages.c.bundle_pending_id.in_(wanted))
            .order_by(messages.c.id)
        ).mappings()
        grouped: dict[str, list[Any]] = {}
        for row in found:
            grouped.setdefault(row["bundle_pending_id"], []).append(row)
        for pending_id in wanted:
            raw = grouped.get(pending_id, [])
            rows = [parse_row(_message_record(r)) for r in raw]
            if any(row.is_resolved for row in rows):
                yield pending_id, rows, [r["metadata"] for r in raw], rows[0].session_id


def _scopes(connection: Connection) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """session id → its task id, and task id → workspace id."""
    sessions = sa.table("task_sessions", sa.column("id"), sa.column("task_id"))
    tasks = sa.table("tasks", sa.column("id"), sa.column("workspace_id"))
    session_task = {
        r[0]: r[1] for r in connection.execute(sa.select(sessions.c.id, sessions.c.task_id))
    }
    workspace = {
        r[0]: r[1] for r in connection.execute(sa.select(tasks.c.id, tasks.c.workspace_id))
    }
    return session_task, workspace


def backfill(connection: Connection, messages: sa.TableClause) -> int:
    """Write the chain of every bundle resolved so far (see the module docstring); returns how
    many records were written. ``messages`` names the columns this revision reads."""
    chain = sa.table(
        "audit_chain",
        *(sa.column(name) for name in ("scope", "seq", "pending_id", "prev_hash", "hash", "body")),
    )
    heads = sa.table(
        "audit_heads", *(sa.column(name) for name in ("scope", "seq", "prev_hash", "hash"))
    )
    session_task, workspace = _scopes(connection)
    positions: dict[str, tuple[int, str, str]] = {}  # scope → (seq, prev_hash, hash)
    pending: list[dict[str, Any]] = []
    written = 0
    for pending_id, rows, metadata, session_id in _bundles(
        connection, messages, _resolved_order(connection, messages)
    ):
        task_id = resolve_task_id((row.task_id for row in rows), session_task.get(session_id))
        scope = str(workspace.get(task_id) or "")
        seq, _, prev_hash = positions.get(scope, (0, GENESIS, GENESIS))
        body = _body(pending_id, rows, metadata)
        link = _link(prev_hash, body)
        positions[scope] = (seq + 1, prev_hash, link)
        pending.append(
            {"scope": scope, "seq": seq + 1, "pending_id": pending_id, "prev_hash": prev_hash}
            | {"hash": link, "body": body}
        )
        if len(pending) >= BATCH:
            connection.execute(sa.insert(chain), pending)
            written += len(pending)
            pending = []
    if pending:
        connection.execute(sa.insert(chain), pending)
        written += len(pending)
    values = [
        {"scope": scope, "seq": seq, "prev_hash": prev, "hash": link}
        for scope, (seq, prev, link) in sorted(positions.items())
    ]
    if values:
        connection.execute(sa.insert(heads), values)
    return written
