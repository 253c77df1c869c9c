"""What both host repositories share: a new workspace, task, session and transcript message."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any

from clarion.domain.host import Session, Task, Turn, Workspace
from clarion.domain.rows import MessageRecord
from clarion.domain.transitions import new_message, new_session
from clarion.ports.system import Clock, IdGenerator


class HostRecords(abc.ABC):
    """The storage-independent half of a :class:`~clarion.ports.host.HostRepository` (the
    subclass supplies ``_clock`` and ``_ids``)."""

    _clock: Clock
    _ids: IdGenerator

    def create_workspace(self, name: str, owner_id: str = "") -> Workspace:
        workspace = Workspace(
            id=self._ids.new_id(), name=name, owner_id=owner_id, created_at=self._clock.now()
        )
        return self._insert_workspace(workspace)

    def create_task(self, title: str, workspace_id: str = "") -> Task:
        task = Task(
            id=self._ids.new_id(),
            title=title,
            workspace_id=workspace_id,
            created_at=self._clock.now(),
        )
        return self._insert_task(task)

    def create_session(
        self, task_id: str, *, is_primary: bool = False, agent_token_hash: str = ""
    ) -> tuple[Session, Turn]:
        def session() -> Session:
            now = self._clock.now()
            return new_session(
                self._ids.new_id(),
                task_id,
                now,
                is_primary=is_primary,
                agent_token_hash=agent_token_hash,
            )

        return self._add_session(task_id, session)

    def append_message(
        self,
        session_id: str,
        *,
        turn_id: str,
        content: str,
        author_type: str = "user",
        type: str = "message",
        metadata: Mapping[str, Any] | None = None,
        task_id: str | None = None,
    ) -> MessageRecord:
        def message(session: Session) -> MessageRecord:
            return new_message(
                message_id=self._ids.new_id(),
                session_id=session_id,
                task_id=session.task_id if task_id is None else task_id,
                turn_id=turn_id,
                now=self._clock.now(),
                content=content,
                author_type=author_type,
                type=type,
                metadata=metadata or {},
            )

        return self._append(session_id, turn_id, message)

    @abc.abstractmethod
    def _insert_workspace(self, workspace: Workspace) -> Workspace:
        """Keep the new ``workspace``; returns it as stored."""

    @abc.abstractmethod
    def _insert_task(self, task: Task) -> Task:
        """Keep the new ``task``; returns it as stored."""

    @abc.abstractmethod
    def _add_session(self, task_id: str, session: Callable[[], Session]) -> tuple[Session, Turn]:
        """In one step: raise ``NotFound`` unless task ``task_id`` exists, then keep the
        session ``session()`` makes and its first turn."""

    @abc.abstractmethod
    def _append(
        self, session_id: str, turn_id: str, message: Callable[[Session], MessageRecord]
    ) -> MessageRecord:
        """In one step: raise ``NotFound`` unless the session exists and ``turn_id`` is one of
        its turns, then keep the record ``message(session)`` makes; returns it as stored."""
