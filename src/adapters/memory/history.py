"""The in-memory resolved list (issue #20) and its closed bundles (issue #30): the reference
the SQL query is tested against."""

from __future__ import annotations

from collections.abc import Sequence

from clarion.adapters.memory.store import InMemoryStore
from clarion.domain.activeness import turn_order_key
from clarion.domain.history import (
    HistoryEntry,
    ResolvedPage,
    ResolvedQuery,
    SessionFacts,
    before_position,
    closed_bundle,
    resolved_bundle,
)
from clarion.domain.listing import clamp_limit, task_visible
from clarion.domain.model import is_terminal_state
from clarion.domain.rows import ClarificationRow, resolve_task_id


def list_resolved_bundles(store: InMemoryStore, query: ResolvedQuery) -> ResolvedPage:
    """One page of settled (and, with ``include_closed``, closed) visible bundles, newest
    first (ties: pending id descending); visibility applies before the limit."""
    limit = clamp_limit(query.limit)
    matches: list[HistoryEntry] = store.pick_bundles(
        lambda pending_id, rows: _entry(store, pending_id, rows, query)
    )
    matches.sort(key=lambda bundle: (bundle.resolved_at, bundle.pending_id), reverse=True)
    return ResolvedPage(bundles=tuple(matches[:limit]), has_more=len(matches) > limit)


def session_facts(store: InMemoryStore, session_id: str, turn_id: str) -> SessionFacts:
    """The session's terminal state and the start of the turn after ``turn_id`` (hold the
    store's lock)."""
    session = store.sessions.get(session_id)
    turns = sorted(store.session_turns(session_id), key=turn_order_key)
    position = next((i for i, turn in enumerate(turns) if turn.id == turn_id), None)
    following = turns[position + 1] if position is not None and position + 1 < len(turns) else None
    return SessionFacts(
        terminal=session is not None and is_terminal_state(session.state),
        state_changed_at=session.updated_at if session is not None else None,
        next_turn_started_at=following.started_at if following is not None else None,
    )


def _entry(
    store: InMemoryStore, pending_id: str, rows: Sequence[ClarificationRow], query: ResolvedQuery
) -> HistoryEntry | None:
    task_id = resolve_task_id(
        (row.task_id for row in rows), store.session_task_id(rows[0].session_id)
    )
    if not store.assignment_admits(query.visibility.assignee, pending_id):  # issue #33
        return None
    task = store.tasks.get(task_id)
    if task is None:  # M5a, as the pending list
        return None
    workspace = store.workspaces.get(task.workspace_id)
    owner_id = workspace.owner_id if workspace is not None else ""
    if not task_visible(query.visibility, task.workspace_id, workspace is not None, owner_id):
        return None
    found: HistoryEntry | None = resolved_bundle(pending_id, task_id, rows)
    if found is None and query.include_closed and store.bundle_is_well_formed(pending_id):
        facts = session_facts(store, rows[0].session_id, rows[0].turn_id)
        found = closed_bundle(pending_id, task_id, rows, facts)
    return found if found is not None and before_position(found, query) else None
