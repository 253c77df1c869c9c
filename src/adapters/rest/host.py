"""The reference host's routes (interfaces.md "REST — the reference host").

A workspace, task or session the caller may not see is the same 404 as a missing one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from clarion.adapters import wire
from clarion.adapters.rest.auth import require_identity
from clarion.adapters.rest.bodies import read_model
from clarion.adapters.rest.query import page_parameters, query_value
from clarion.adapters.rest.routes import Endpoint
from clarion.adapters.wire import models
from clarion.app.usecases.host import HostOperations
from clarion.app.usecases.lifecycle import Lifecycle
from clarion.domain.host import Session, Task, Turn, Workspace
from clarion.domain.paging import Page
from clarion.domain.rows import MessageRecord


@attrs.frozen
class _NewTaskView:
    """A task that was just created: nothing can be pending on it yet (T2)."""

    task: Task
    task_pending_action: None = None
    primary_session_pending_action: None = None


# --- bodies ------------------------------------------------------------------------------


# --- shapes ------------------------------------------------------------------------------


def workspace_model(workspace: Workspace) -> models.Workspace:
    return models.Workspace(workspace.id, workspace.name, workspace.owner_id, workspace.created_at)


def session_model(session: Session) -> models.Session:
    return models.Session(
        id=session.id,
        task_id=session.task_id,
        state=session.state,
        is_primary=session.is_primary,
        created_at=session.created_at,
        updated_at=session.updated_at,
    )


def turn_model(turn: Turn) -> models.Turn:
    return models.Turn(
        turn.id, turn.session_id, turn.started_at, turn.created_at, turn.completed_at
    )


def message_model(message: MessageRecord) -> models.Message:
    return models.Message(
        id=message.id,
        session_id=message.session_id,
        task_id=message.task_id,
        turn_id=message.turn_id,
        type=message.type,
        author_type=message.author_type,
        content=message.content,
        metadata=dict(message.metadata),
        created_at=message.created_at,
        updated_at=message.updated_at,
    )


def _json(shape: Any, status_code: int = 200) -> JSONResponse:
    return JSONResponse(wire.unstructure(shape), status_code=status_code)


# --- routes ------------------------------------------------------------------------------


def host_routes(*, host: HostOperations, lifecycle: Lifecycle) -> dict[str, Endpoint]:
    """Workspaces, tasks, sessions, turns, transcript and resume outbox, by operation id."""
    workspaces = _WorkspaceEndpoints(host)
    sessions = _SessionEndpoints(host, lifecycle)
    return {
        "createWorkspace": workspaces.create_workspace,
        "listWorkspaces": workspaces.list_workspaces,
        "createTask": workspaces.create_task,
        "listTasks": workspaces.list_tasks,
        "createSession": sessions.create_session,
        "getSession": sessions.get_session,
        "setSessionState": sessions.patch_session,
        "startTurn": sessions.start_turn,
        "completeTurn": sessions.complete_turn,
        "listMessages": sessions.messages,
        "listResumes": sessions.resumes,
    }


@attrs.frozen
class _WorkspaceEndpoints:
    """Workspaces and the tasks in them."""

    host: HostOperations

    async def create_workspace(self, request: Request) -> Response:
        body = await read_model(request, models.WorkspaceIn)
        workspace = await self.host.create_workspace(
            require_identity(request), body.name, body.owner_id
        )
        return _json(workspace_model(workspace), status_code=201)

    async def list_workspaces(self, request: Request) -> Response:
        cursor, limit = page_parameters(request)
        page = await self.host.list_workspaces(
            require_identity(request), cursor=cursor, limit=limit
        )
        items = [workspace_model(workspace) for workspace in page.items]
        return _json(models.WorkspaceList(items, len(items), page.next_cursor))

    async def create_task(self, request: Request) -> Response:
        body = await read_model(request, models.TaskIn)
        task = await self.host.create_task(require_identity(request), body.title, body.workspace_id)
        return JSONResponse(wire.task_json(_NewTaskView(task=task)), status_code=201)

    async def list_tasks(self, request: Request) -> Response:
        cursor, limit = page_parameters(request)
        page = await self.host.list_tasks(
            require_identity(request),
            query_value(request, "workspace_id"),
            cursor=cursor,
            limit=limit,
        )
        return JSONResponse(wire.task_page_json(page.items, page.next_cursor))


@attrs.frozen
class _SessionEndpoints:
    """A task's sessions: their state, turns, transcript and resume outbox."""

    host: HostOperations
    lifecycle: Lifecycle

    async def create_session(self, request: Request) -> Response:
        body = await read_model(request, models.SessionIn, optional=True)
        created = await self.host.create_session(
            require_identity(request), request.path_params["task_id"], body.is_primary
        )
        session = attrs.asdict(session_model(created.session), recurse=False)
        return _json(
            models.CreatedSession(
                **session, current_turn_id=created.turn.id, agent_token=created.agent_token
            ),
            status_code=201,
        )

    async def get_session(self, request: Request) -> Response:
        session = await self.host.get_session(
            require_identity(request), request.path_params["session_id"]
        )
        return _json(session_model(session))

    async def patch_session(self, request: Request) -> Response:
        body = await read_model(request, models.SessionPatch)
        session = await self.lifecycle.set_session_state(
            require_identity(request), request.path_params["session_id"], body.state
        )
        return _json(session_model(session))

    async def start_turn(self, request: Request) -> Response:
        turn = await self.lifecycle.start_turn(
            require_identity(request), request.path_params["session_id"]
        )
        return _json(turn_model(turn), status_code=201)

    async def complete_turn(self, request: Request) -> Response:
        detached = await self.lifecycle.complete_turn(
            require_identity(request), request.path_params["session_id"]
        )
        return _json(models.Detached(detached))

    async def messages(self, request: Request) -> Response:
        return await _message_page(request, self.host.messages, models.MessageList)

    async def resumes(self, request: Request) -> Response:
        return await _message_page(request, self.host.resumes_for_session, models.ResumeList)


async def _message_page(
    request: Request,
    read: Callable[..., Awaitable[Page[MessageRecord]]],
    shape: Callable[[list[models.Message], str], models.MessageList | models.ResumeList],
) -> Response:
    """One page of the session's messages as ``read`` (a :class:`HostOperations` method
    taking the caller, session id, cursor and limit) returns it, in its wire ``shape``."""
    cursor, limit = page_parameters(request)
    page = await read(
        require_identity(request), request.path_params["session_id"], cursor=cursor, limit=limit
    )
    return _json(shape([message_model(record) for record in page.items], page.next_cursor))
