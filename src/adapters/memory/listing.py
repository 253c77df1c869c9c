"""The in-memory list query (L1–L16, M5, M5a; upstream facts §7 with the §9.13/§9.14 fixes)."""

from __future__ import annotations

from collections.abc import Sequence

from clarion.adapters.memory.store import InMemoryStore
from clarion.domain.listing import (
    ListedBundle,
    ListPage,
    ListQuery,
    after_position,
    bundle_order_key,
    clamp_limit,
    listed_bundle,
    task_visible,
)
from clarion.domain.rows import ClarificationRow, resolve_task_id


def list_active_bundles(store: InMemoryStore, query: ListQuery) -> ListPage:
    """One page of active, answerable, visible bundles in L6 order.

    Visibility and every other filter are predicates applied before the limit, so ``limit``
    counts returned bundles (L1a); ``has_more`` comes from looking one bundle further (L9).
    """
    limit = clamp_limit(query.limit)
    matches = store.pick_bundles(lambda pending_id, rows: _listable(store, pending_id, rows, query))
    matches.sort(key=bundle_order_key)
    return ListPage(bundles=tuple(matches[:limit]), has_more=len(matches) > limit)


def _listable(
    store: InMemoryStore, pending_id: str, rows: Sequence[ClarificationRow], query: ListQuery
) -> ListedBundle | None:
    # §9.14: the claim's malformed guard; L16: every row has a question id; D4/L2a: active.
    if not store.bundle_is_well_formed(pending_id) or any(not row.question_id for row in rows):
        return None
    if not any(store.row_is_active(row) for row in rows):
        return None
    task_id = resolve_task_id(
        (row.task_id for row in rows), store.session_task_id(rows[0].session_id)
    )
    if not store.assignment_admits(query.visibility.assignee, pending_id):  # issue #33
        return None
    task = store.tasks.get(task_id)
    if task is None:  # M5a: an inner join on an existing task
        return None
    workspace = store.workspaces.get(task.workspace_id)
    owner_id = workspace.owner_id if workspace is not None else ""
    if not task_visible(query.visibility, task.workspace_id, workspace is not None, owner_id):
        return None
    if query.workspace_id and task.workspace_id != query.workspace_id:  # L7, L7a
        return None
    listed = listed_bundle(pending_id, task_id, rows)
    return listed if after_position(listed, query) else None  # L8, L9, L14
