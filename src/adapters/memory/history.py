"""The in-memory resolved list (issue #20): the reference the SQL query is tested against."""

from __future__ import annotations

from collections.abc import Sequence

from clarion.adapters.memory.store import InMemoryStore
from clarion.domain.history import (
    ResolvedBundle,
    ResolvedPage,
    ResolvedQuery,
    before_position,
    resolved_bundle,
)
from clarion.domain.listing import clamp_limit, task_visible
from clarion.domain.rows import ClarificationRow, resolve_task_id


def list_resolved_bundles(store: InMemoryStore, query: ResolvedQuery) -> ResolvedPage:
    """One page of settled, visible bundles, newest resolution first (ties: pending id
    descending); visibility applies before the limit."""
    limit = clamp_limit(query.limit)
    with store.lock:
        matches = [
            found
            for pending_id, rows in store.rows_by_bundle().items()
            if (found := _resolved(store, pending_id, rows, query)) is not None
        ]
    matches.sort(key=lambda bundle: (bundle.resolved_at, bundle.pending_id), reverse=True)
    return ResolvedPage(bundles=tuple(matches[:limit]), has_more=len(matches) > limit)


def _resolved(
    store: InMemoryStore, pending_id: str, rows: Sequence[ClarificationRow], query: ResolvedQuery
) -> ResolvedBundle | None:
    task_id = resolve_task_id(
        (row.task_id for row in rows), store.session_task_id(rows[0].session_id)
    )
    task = store.tasks.get(task_id)
    if task is None:  # M5a, as the pending list
        return None
    workspace = store.workspaces.get(task.workspace_id)
    owner_id = workspace.owner_id if workspace is not None else ""
    if not task_visible(query.visibility, task.workspace_id, workspace is not None, owner_id):
        return None
    found = resolved_bundle(pending_id, task_id, rows)
    return found if found is not None and before_position(found, query) else None
