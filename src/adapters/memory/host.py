"""The in-memory :class:`clarion.ports.HostRepository`."""

from __future__ import annotations

from collections.abc import Callable, Collection

import attrs

from clarion.adapters.memory.store import InMemoryRepository, frozen_metadata
from clarion.adapters.stores.host import HostRecords
from clarion.domain.errors import NotFound, Resource
from clarion.domain.host import Session, Task, Turn, Workspace
from clarion.domain.listing import Visibility, task_visible
from clarion.domain.paging import Page, PageRequest, cut_page
from clarion.domain.rows import MessageRecord


class InMemoryHostRepository(InMemoryRepository, HostRecords):
    """Workspaces, tasks, sessions, turns and the transcript, held in an :class:`InMemoryStore`."""

    def _insert_workspace(self, workspace: Workspace) -> Workspace:
        return self._store.insert(self._store.workspaces, workspace)

    def get_workspace(self, workspace_id: str) -> Workspace | None:
        return self._store.lookup(self._store.workspaces, workspace_id)

    def agents_workspace(self, owner_id: str, name: str) -> Workspace:
        with self._store.lock:
            found = self._store.agents_workspaces.get(owner_id)
            if found is not None:
                return self._store.workspaces[found]
            workspace = self.create_workspace(name, owner_id)
            self._store.agents_workspaces[owner_id] = workspace.id
            return workspace

    def list_workspaces(self) -> tuple[Workspace, ...]:
        with self._store.lock:
            return tuple(
                sorted(self._store.workspaces.values(), key=lambda w: (w.created_at, w.id))
            )

    def page_workspaces(self, visibility: Visibility, page: PageRequest) -> Page[Workspace]:
        with self._store.lock:
            found = [
                workspace
                for workspace in self._store.workspaces.values()
                if visibility.sees(workspace.id, workspace.owner_id) and page.admits(workspace)
            ]
        return cut_page(sorted(found, key=lambda w: (w.created_at, w.id)), page.limit)

    def _insert_task(self, task: Task) -> Task:
        return self._store.insert(self._store.tasks, task)

    def get_task(self, task_id: str) -> Task | None:
        return self._store.lookup(self._store.tasks, task_id)

    def get_task_and_workspace(self, task_id: str) -> tuple[Task, Workspace | None] | None:
        with self._store.lock:
            task = self._store.tasks.get(task_id)
            if task is None:
                return None
            workspace = self._store.workspaces.get(task.workspace_id) if task.workspace_id else None
            return task, workspace

    def list_tasks(self, workspace_id: str = "") -> tuple[Task, ...]:
        with self._store.lock:
            tasks = [
                task
                for task in self._store.tasks.values()
                if not workspace_id or task.workspace_id == workspace_id
            ]
            return tuple(sorted(tasks, key=lambda t: (t.created_at, t.id)))

    def page_tasks(
        self, visibility: Visibility, page: PageRequest, workspace_id: str = ""
    ) -> Page[Task]:
        with self._store.lock:
            workspaces = self._store.workspaces
            found = [
                task
                for task in self._store.tasks.values()
                if (not workspace_id or task.workspace_id == workspace_id)
                and page.admits(task)
                and task_visible(
                    visibility,
                    task.workspace_id,
                    task.workspace_id in workspaces,
                    workspaces[task.workspace_id].owner_id
                    if task.workspace_id in workspaces
                    else "",
                )
            ]
        return cut_page(sorted(found, key=lambda t: (t.created_at, t.id)), page.limit)

    def delete_task(self, task_id: str) -> bool:
        with self._store.lock:
            return self._store.delete_task(task_id)

    def _add_session(self, task_id: str, session: Callable[[], Session]) -> tuple[Session, Turn]:
        with self._store.lock:
            if task_id not in self._store.tasks:
                raise NotFound(resource=Resource.TASK, key=task_id)
            created = session()
            self._store.sessions[created.id] = created
            return created, self._new_turn(created.id)

    def get_session(self, session_id: str) -> Session | None:
        return self._store.lookup(self._store.sessions, session_id)

    def sessions_for_tasks(self, task_ids: Collection[str]) -> dict[str, tuple[Session, ...]]:
        wanted = set(task_ids)
        with self._store.lock:
            grouped: dict[str, list[Session]] = {}
            for session in self._store.sessions.values():
                if session.task_id in wanted:
                    grouped.setdefault(session.task_id, []).append(session)
        return {
            task_id: tuple(sorted(sessions, key=lambda s: (s.created_at, s.id)))
            for task_id, sessions in grouped.items()
        }

    def set_session_state(
        self, session_id: str, state: str, *, expected: Collection[str] | None = None
    ) -> Session | None:
        with self._store.lock:
            return self._store.set_session_state(session_id, state, self._clock.now(), expected)

    def start_turn(self, session_id: str) -> Turn:
        with self._store.lock:
            if session_id not in self._store.sessions:
                raise NotFound(resource=Resource.SESSION, key=session_id)
            superseded = self._store.active_on_current_turn(session_id)
            turn = self._new_turn(session_id)
            self._store.record_superseded(superseded, turn)
            return turn

    def _new_turn(self, session_id: str) -> Turn:
        now = self._clock.now()
        turn = Turn(id=self._ids.new_id(), session_id=session_id, started_at=now, created_at=now)
        self._store.put_turn(turn)
        return turn

    def current_turn(self, session_id: str) -> Turn | None:
        with self._store.lock:
            turn_id = self._store.current_turn_id(session_id)
            return self._store.turns[turn_id] if turn_id is not None else None

    def complete_current_turn(self, session_id: str) -> Turn | None:
        with self._store.lock:
            turn = self.current_turn(session_id)
            if turn is None or turn.completed_at is not None:
                return turn
            completed = attrs.evolve(turn, completed_at=self._clock.now())
            self._store.put_turn(completed)
            return completed

    def _append(
        self, session_id: str, turn_id: str, message: Callable[[Session], MessageRecord]
    ) -> MessageRecord:
        with self._store.lock:
            session = self._store.sessions.get(session_id)
            if session is None:
                raise NotFound(resource=Resource.SESSION, key=session_id)
            turn = self._store.turns.get(turn_id)
            if turn is None or turn.session_id != session_id:
                raise NotFound(resource=Resource.TURN, key=turn_id)
            record = message(session)
            record = attrs.evolve(record, metadata=frozen_metadata(record.metadata))
            self._store.put_message(record)
            return record

    def list_messages(self, session_id: str) -> tuple[MessageRecord, ...]:
        with self._store.lock:
            records = list(self._store.session_messages(session_id))
        return tuple(sorted(records, key=lambda m: (m.created_at, m.id)))

    def page_messages(
        self, session_id: str, page: PageRequest, type: str = ""
    ) -> Page[MessageRecord]:
        with self._store.lock:
            found = [
                message
                for message in self._store.session_messages(session_id)
                if (not type or message.type == type) and page.admits(message)
            ]
        return cut_page(sorted(found, key=lambda m: (m.created_at, m.id)), page.limit)
