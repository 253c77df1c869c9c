"""The SQL :class:`clarion.ports.HostRepository`: workspaces, tasks, sessions, turns and the
transcript. Writes that can change a bundle's activeness (session state, new turns, new
messages, turn completion) take the session's write lock (:mod:`clarion.adapters.sql.locks`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, TypeVar

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.sql.elements import ColumnElement

from clarion.adapters.sql.claims import active_on_current_turn
from clarion.adapters.sql.engine import (
    SqlStore,
    insert_or_skip,
    read_one,
    read_transaction,
    read_with_parent,
)
from clarion.adapters.sql.locks import lock_sessions
from clarion.adapters.sql.outbox import record_superseded
from clarion.adapters.sql.predicates import is_clarification
from clarion.adapters.sql.records import (
    MESSAGE_COLUMNS,
    bundle_pending_ids,
    insert_messages,
    insert_turn,
    load_current_turn,
    load_session,
    message_record,
    refresh_bundle_keys,
    select_messages,
    session_from_row,
    update_session_state,
)
from clarion.adapters.sql.rows import from_row, insert_record, row_values
from clarion.adapters.sql.schema import (
    messages,
    task_session_turns,
    task_sessions,
    tasks,
    workspaces,
)
from clarion.adapters.stores.host import HostRecords
from clarion.domain.errors import NotFound, Resource
from clarion.domain.host import Session, Task, Turn, Workspace
from clarion.domain.listing import Visibility
from clarion.domain.paging import Page, PageRequest, cut_page
from clarion.domain.rows import MessageRecord


def _workspace(row: RowMapping) -> Workspace:
    return from_row(Workspace, row)


def _task(row: RowMapping) -> Task:
    return from_row(Task, row)


T = TypeVar("T", Workspace, Task, MessageRecord)


def _after(table: sa.Table, page: PageRequest) -> ColumnElement[bool]:
    """Strictly after the page's position in ``(created_at, id)`` order (true without one)."""
    if page.after is None:
        return sa.true()
    after_at, after_id = page.after
    return sa.or_(
        table.c.created_at > after_at,
        sa.and_(table.c.created_at == after_at, table.c.id > after_id),
    )


def _keyset(statement: sa.Select[Any], table: sa.Table, page: PageRequest) -> sa.Select[Any]:
    """``statement`` from the page's position, in ``(created_at, id)`` order, ``limit + 1``
    rows (the extra one tells whether a further page exists)."""
    return (
        statement.where(_after(table, page))
        .order_by(table.c.created_at, table.c.id)
        .limit(page.limit + 1)
    )


def _workspace_visible(visibility: Visibility, workspace: sa.FromClause) -> ColumnElement[bool]:
    """L1a for an existing workspace row: the owner rule evaluated in SQL, or the id set."""
    if visibility.unscoped:
        return sa.true()
    if visibility.owner_id is not None:
        return workspace.c.owner_id.in_(sorted({"", visibility.owner_id}))
    if not visibility.workspace_ids:  # no IN () for an empty set
        return sa.false()
    return workspace.c.id.in_(sorted(visibility.workspace_ids))


def _insert_or_keep(connection: Connection, values: dict[str, Any]) -> Any:
    """``INSERT … ON CONFLICT (agents_owner) DO NOTHING`` of one workspace row."""
    return insert_or_skip(connection, workspaces, "agents_owner").values(**values)


class SqlHostRepository(SqlStore, HostRecords):
    """See the module docstring; ids from ``ids``, timestamps from ``clock``."""

    # -- workspaces and tasks --------------------------------------------------------------

    def _insert_workspace(self, workspace: Workspace) -> Workspace:
        return insert_record(self._writes, workspaces, workspace, updated_at=workspace.created_at)

    def get_workspace(self, workspace_id: str) -> Workspace | None:
        row = read_one(self._engine, sa.select(workspaces).where(workspaces.c.id == workspace_id))
        return _workspace(row) if row is not None else None

    def agents_workspace(self, owner_id: str, name: str) -> Workspace:
        """A read by the unique key ``agents_owner``; only when it finds nothing, one write
        transaction inserting with ``ON CONFLICT DO NOTHING`` on that key and reading back
        whichever row holds it (on PostgreSQL the insert waits for a concurrent inserter's
        commit, and the read, a new statement under READ COMMITTED, sees its row)."""
        by_owner = sa.select(workspaces).where(workspaces.c.agents_owner == owner_id)
        with read_transaction(self._engine) as connection:
            row = connection.execute(by_owner).mappings().first()
        if row is not None:
            return _workspace(row)
        now = self._clock.now()
        values = {
            "id": self._ids.new_id(),
            "name": name,
            "owner_id": owner_id,
            "agents_owner": owner_id,
            "created_at": now,
            "updated_at": now,
        }
        with self._writes.begin() as connection:
            connection.execute(_insert_or_keep(connection, values))
            return _workspace(connection.execute(by_owner).mappings().one())

    def list_workspaces(self) -> tuple[Workspace, ...]:
        statement = sa.select(workspaces).order_by(workspaces.c.created_at, workspaces.c.id)
        with read_transaction(self._engine) as connection:
            return tuple(_workspace(row) for row in connection.execute(statement).mappings())

    def page_workspaces(self, visibility: Visibility, page: PageRequest) -> Page[Workspace]:
        statement = sa.select(workspaces).where(_workspace_visible(visibility, workspaces))
        return self._page(_keyset(statement, workspaces, page), _workspace, page)

    def _page(
        self, statement: sa.Select[Any], build: Callable[[RowMapping], T], page: PageRequest
    ) -> Page[T]:
        with read_transaction(self._engine) as connection:
            rows = [build(row) for row in connection.execute(statement).mappings()]
        return cut_page(rows, page.limit)

    def _insert_task(self, task: Task) -> Task:
        return insert_record(self._writes, tasks, task, updated_at=task.created_at)

    def get_task(self, task_id: str) -> Task | None:
        row = read_one(self._engine, sa.select(tasks).where(tasks.c.id == task_id))
        return _task(row) if row is not None else None

    def get_task_and_workspace(self, task_id: str) -> tuple[Task, Workspace | None] | None:
        row = read_with_parent(
            self._engine,
            tasks,
            workspaces,
            key="workspace_id",
            prefix="ws_",
            by="id",
            value=task_id,
        )
        if row is None:
            return None
        found = None
        if row["ws_id"] is not None and row["workspace_id"] != "":
            found = Workspace(
                id=row["ws_id"],
                name=row["ws_name"],
                owner_id=row["ws_owner_id"],
                created_at=row["ws_created_at"],
            )
        return _task(row), found

    def list_tasks(self, workspace_id: str = "") -> tuple[Task, ...]:
        statement = sa.select(tasks).order_by(tasks.c.created_at, tasks.c.id)
        if workspace_id:
            statement = statement.where(tasks.c.workspace_id == workspace_id)
        with read_transaction(self._engine) as connection:
            return tuple(_task(row) for row in connection.execute(statement).mappings())

    def page_tasks(
        self, visibility: Visibility, page: PageRequest, workspace_id: str = ""
    ) -> Page[Task]:
        # L1c with the task's own workspace, probed by primary key through the left join:
        # an empty or dangling workspace id, or a visible workspace.
        workspace = workspaces.alias("workspace")
        statement = sa.select(tasks).select_from(
            tasks.outerjoin(workspace, workspace.c.id == tasks.c.workspace_id)
        )
        if not visibility.unscoped:
            statement = statement.where(
                sa.or_(
                    tasks.c.workspace_id == "",
                    workspace.c.id.is_(None),
                    _workspace_visible(visibility, workspace),
                )
            )
        if workspace_id:
            statement = statement.where(tasks.c.workspace_id == workspace_id)
        return self._page(_keyset(statement, tasks, page), _task, page)

    def delete_task(self, task_id: str) -> bool:
        """Foreign keys cascade the delete to sessions, their turns and messages."""
        with self._writes.begin() as connection:
            session_ids = list(
                connection.execute(
                    sa.select(task_sessions.c.id).where(task_sessions.c.task_id == task_id)
                ).scalars()
            )
            lock_sessions(connection, session_ids)
            # Bundles with rows outside this task keep rows: their keys are recomputed.
            doomed = bundle_pending_ids(
                select_messages(
                    connection,
                    messages.c.task_session_id.in_(session_ids),
                    is_clarification(messages),
                )
                if session_ids
                else []
            )
            result = connection.execute(sa.delete(tasks).where(tasks.c.id == task_id))
            refresh_bundle_keys(connection, doomed)
        return result.rowcount == 1

    # -- sessions and turns ------------------------------------------------------------------

    def _add_session(self, task_id: str, session: Callable[[], Session]) -> tuple[Session, Turn]:
        with self._writes.begin() as connection:
            exists = connection.execute(sa.select(tasks.c.id).where(tasks.c.id == task_id))
            if exists.first() is None:
                raise NotFound(resource=Resource.TASK, key=task_id)
            created = session()
            connection.execute(sa.insert(task_sessions).values(row_values(task_sessions, created)))
            turn = insert_turn(
                connection, turn_id=self._ids.new_id(), session=created, now=self._clock.now()
            )
        return created, turn

    def get_session(self, session_id: str) -> Session | None:
        with read_transaction(self._engine) as connection:
            return load_session(connection, session_id)

    def sessions_for_tasks(self, task_ids: Collection[str]) -> dict[str, tuple[Session, ...]]:
        wanted = sorted(set(task_ids))
        if not wanted:
            return {}
        statement = (
            sa.select(task_sessions)
            .where(task_sessions.c.task_id.in_(wanted))
            .order_by(task_sessions.c.created_at, task_sessions.c.id)
        )
        grouped: dict[str, list[Session]] = {}
        with read_transaction(self._engine) as connection:
            for row in connection.execute(statement).mappings():
                session = session_from_row(row)
                grouped.setdefault(session.task_id, []).append(session)
        return {task_id: tuple(sessions) for task_id, sessions in grouped.items()}

    def set_session_state(
        self, session_id: str, state: str, *, expected: Collection[str] | None = None
    ) -> Session | None:
        with self._writes.begin() as connection:
            # Serializes with the claim (facts §1.7): a claim either committed before this
            # change or sees the new state in its non-terminal-session predicate.
            lock_sessions(connection, [session_id])
            return update_session_state(connection, session_id, state, self._clock.now(), expected)

    def start_turn(self, session_id: str) -> Turn:
        with self._writes.begin() as connection:
            lock_sessions(connection, [session_id])
            session = load_session(connection, session_id)
            if session is None:
                raise NotFound(resource=Resource.SESSION, key=session_id)
            superseded = active_on_current_turn(connection, session_id)
            now = self._clock.now()
            turn = insert_turn(connection, turn_id=self._ids.new_id(), session=session, now=now)
            # Issue #30: the turn closes them; their rows are not written (facts §4.4).
            record_superseded(connection, superseded, turn.started_at)
            return turn

    def current_turn(self, session_id: str) -> Turn | None:
        with read_transaction(self._engine) as connection:
            return load_current_turn(connection, session_id)

    def complete_current_turn(self, session_id: str) -> Turn | None:
        with self._writes.begin() as connection:
            lock_sessions(connection, [session_id])
            turn = load_current_turn(connection, session_id)
            if turn is None or turn.completed_at is not None:
                return turn
            now = self._clock.now()
            connection.execute(
                sa.update(task_session_turns)
                .where(task_session_turns.c.id == turn.id)
                .values(completed_at=now, updated_at=now)
            )
        return attrs.evolve(turn, completed_at=now)

    # -- the transcript ----------------------------------------------------------------------

    def _append(
        self, session_id: str, turn_id: str, message: Callable[[Session], MessageRecord]
    ) -> MessageRecord:
        with self._writes.begin() as connection:
            lock_sessions(connection, [session_id])
            session = load_session(connection, session_id)
            if session is None:
                raise NotFound(resource=Resource.SESSION, key=session_id)
            turn_owner = connection.execute(
                sa.select(task_session_turns.c.task_session_id).where(
                    task_session_turns.c.id == turn_id
                )
            ).scalar()
            if turn_owner != session_id:
                raise NotFound(resource=Resource.TURN, key=turn_id)
            record = message(session)
            insert_messages(connection, [record])
            # Read back what was stored, so callers see the metadata as every reader will.
            return select_messages(connection, messages.c.id == record.id)[0]

    def list_messages(self, session_id: str) -> tuple[MessageRecord, ...]:
        with read_transaction(self._engine) as connection:
            return tuple(select_messages(connection, messages.c.task_session_id == session_id))

    def page_messages(
        self, session_id: str, page: PageRequest, type: str = ""
    ) -> Page[MessageRecord]:
        statement = sa.select(*MESSAGE_COLUMNS).where(messages.c.task_session_id == session_id)
        if type:
            statement = statement.where(messages.c.type == type)
        return self._page(_keyset(statement, messages, page), message_record, page)
