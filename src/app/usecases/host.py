"""The reference host's operations: workspaces, tasks, sessions, transcripts and resumes.

Every read and write applies the same visibility rules as the clarification surface (spec
"Permissions"): a caller sees a workspace that is unowned or its own, and a task whose
workspace is empty, dangling or visible (L1c). Anything else is the same not-found as a missing
row. Task lists carry the pending-action projection (T1, T2; facts §4.11).
"""

from __future__ import annotations

import hmac
import secrets
from typing import Final

import attrs

from clarion.app.usecases.access import load_authorized_session
from clarion.app.usecases.auth import hash_credential
from clarion.app.usecases.runner import Runner
from clarion.domain.activeness import primary_session_pending_action, task_pending_action
from clarion.domain.errors import InvalidArgument, NotFound, Resource
from clarion.domain.host import Session, Task, Turn, Workspace
from clarion.domain.limits import Limits
from clarion.domain.listing import task_visible
from clarion.domain.model import Identity, SessionState, is_terminal_state
from clarion.domain.paging import Page, PageRequest, page_request
from clarion.domain.rows import MessageRecord
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.host import HostRepository
from clarion.ports.resume import RESUME_MESSAGE_TYPE
from clarion.ports.tokens import UserDirectory

HOST_FAILED = "failed to read or write the host record"
AGENT_TOKEN_PREFIX: Final = "clarion_agt_"
# The identity an agent acts with when its session's workspace has no owner: it sees only
# unowned rows (upstream facts §5.11's sentinel for the same case).
UNOWNED_WORKSPACE_USER: Final = "clarion:unowned-workspace"


@attrs.frozen
class TaskView:
    """A task as listed (T1, T2): ``None`` when no input-capable session is blocked."""

    task: Task
    task_pending_action: str | None
    primary_session_pending_action: str | None


@attrs.frozen
class CreatedSession:
    """A new session, its first turn, and its agent token (shown once, stored hashed)."""

    session: Session
    turn: Turn
    agent_token: str


@attrs.define(kw_only=True)
class HostOperations:
    """Workspaces, tasks, sessions and transcripts, as seen by one caller."""

    _host: HostRepository = attrs.field(alias="host")
    _claims: ClaimRepository = attrs.field(alias="claims")
    _authorizer: TaskAuthorizer = attrs.field(alias="authorizer")
    _run: Runner = attrs.field(alias="runner")
    # Where agent tokens check that the workspace owner they act as is still an active user
    # (the composition root passes its token store).
    _users: UserDirectory | None = attrs.field(default=None, alias="users")
    # The page sizes of the lists (CLARION_DEFAULT_PAGE_SIZE, CLARION_MAX_PAGE_SIZE).
    _limits: Limits = attrs.field(factory=Limits, alias="limits")

    @property
    def max_page_size(self) -> int:
        """The largest page any list returns (``CLARION_MAX_PAGE_SIZE``)."""
        return self._limits.max_page_size

    def _page_request(self, cursor: str, limit: int | None) -> PageRequest:
        return page_request(
            cursor,
            limit,
            default=self._limits.default_page_size,
            maximum=self._limits.max_page_size,
        )

    # -- workspaces ------------------------------------------------------------------------

    async def create_workspace(
        self, identity: Identity, name: str, owner_id: str | None = None
    ) -> Workspace:
        """Create a workspace. A scoped caller owns it; only an admin or unscoped caller may
        name another owner or create an unowned one (``owner_id=""``, visible to everyone), so
        no user can flood everybody's visible set.

        Raises:
            InvalidArgument: empty ``name``, or an ``owner_id`` the caller may not assign.
        """
        if not name.strip():
            raise InvalidArgument("name is required", field="name")
        if owner_id is None:
            owner_id = (identity.user_id or "") if identity.is_scoped else ""
        if identity.is_scoped and not identity.is_admin:
            if owner_id == "":
                raise InvalidArgument(
                    "owner_id: only an admin may create an unowned workspace", field="owner_id"
                )
            if owner_id != identity.user_id:
                raise InvalidArgument("owner_id may only name yourself", field="owner_id")
        return await self._run.guarded(HOST_FAILED, self._host.create_workspace, name, owner_id)

    async def agents_workspace(self, identity: Identity, name: str) -> Workspace:
        """The caller's own agents workspace — owned by a scoped caller, unowned for an
        unscoped one (auth disabled) — created named ``name`` on first use. One per owner,
        kept so by the store even across processes, and found by its key whatever the number
        of the caller's workspaces (issue #29 S6).

        Raises:
            ClaimError: the store failed.
        """
        owner = (identity.user_id or "") if identity.is_scoped else ""
        return await self._run.guarded(HOST_FAILED, self._host.agents_workspace, owner, name)

    async def list_workspaces(
        self, identity: Identity, *, cursor: str = "", limit: int | None = None
    ) -> Page[Workspace]:
        """One page of the workspaces ``identity`` may see (per the authorizer's L1a set),
        oldest first, from ``cursor`` (a previous page's ``next_cursor``).

        Raises:
            InvalidArgument: a corrupt ``cursor`` or a ``limit`` outside 1 to the maximum.
        """
        page = self._page_request(cursor, limit)
        return await self._run.guarded(HOST_FAILED, self._list_workspaces, identity, page)

    def _list_workspaces(self, identity: Identity, page: PageRequest) -> Page[Workspace]:
        return self._host.page_workspaces(self._authorizer.visibility(identity), page)

    # -- tasks -----------------------------------------------------------------------------

    async def create_task(self, identity: Identity, title: str, workspace_id: str = "") -> Task:
        """Create a task, in a visible workspace when ``workspace_id`` is given.

        Raises:
            InvalidArgument: empty ``title``.
            NotFound: the workspace does not exist or ``identity`` may not see it.
        """
        if not title.strip():
            raise InvalidArgument("title is required", field="title")
        return await self._run.guarded(
            HOST_FAILED, self._create_task, identity, title, workspace_id
        )

    def _create_task(self, identity: Identity, title: str, workspace_id: str) -> Task:
        if workspace_id:
            # The same visible set the listing uses, so a host's own authorizer governs both.
            visibility = self._authorizer.visibility(identity)
            workspace = self._host.get_workspace(workspace_id)
            if workspace is None or not visibility.sees(workspace.id, workspace.owner_id):
                raise NotFound(resource=Resource.WORKSPACE)
        return self._host.create_task(title, workspace_id)

    async def list_tasks(
        self,
        identity: Identity,
        workspace_id: str = "",
        *,
        cursor: str = "",
        limit: int | None = None,
    ) -> Page[TaskView]:
        """One page of the tasks ``identity`` may see (all, or one workspace's), oldest first
        from ``cursor``, with their pending-action projection. A workspace the caller may not
        see lists as empty (as L7).

        Raises:
            InvalidArgument: a corrupt ``cursor`` or a ``limit`` outside 1 to the maximum.
        """
        page = self._page_request(cursor, limit)
        return await self._run.guarded(HOST_FAILED, self._list_tasks, identity, workspace_id, page)

    async def list_session_tasks(
        self, identity: Identity, session_id: str, workspace_id: str = ""
    ) -> tuple[TaskView, ...]:
        """What ``list_tasks`` shows an agent bound to one session: that session's task
        alone (when ``identity`` may see it and it is in ``workspace_id``, if given), with its
        pending-action projection; nothing for a missing session."""
        return await self._run.guarded(
            HOST_FAILED, self._list_session_tasks, identity, workspace_id, session_id
        )

    def _list_tasks(
        self, identity: Identity, workspace_id: str, page: PageRequest
    ) -> Page[TaskView]:
        # Visibility is a predicate of the one page query (L1c), not a read of every workspace.
        found = self._host.page_tasks(self._authorizer.visibility(identity), page, workspace_id)
        return Page(items=self._with_actions(found.items), next_cursor=found.next_cursor)

    def _list_session_tasks(
        self, identity: Identity, workspace_id: str, session_id: str
    ) -> tuple[TaskView, ...]:
        session = self._host.get_session(session_id) if session_id else None
        found = self._host.get_task_and_workspace(session.task_id) if session else None
        if found is None:
            return ()
        task, workspace = found
        if workspace_id and task.workspace_id != workspace_id:
            return ()
        visible = task_visible(
            self._authorizer.visibility(identity),
            task.workspace_id,
            workspace is not None,
            workspace.owner_id if workspace is not None else "",
        )
        return self._with_actions((task,)) if visible else ()

    def _with_actions(self, tasks: tuple[Task, ...]) -> tuple[TaskView, ...]:
        """The tasks with their pending-action projection (T1, T2)."""
        sessions = self._host.sessions_for_tasks([task.id for task in tasks])
        # Only input-capable sessions can carry a pending action (facts §4.11).
        capable = [
            session.id
            for task_sessions in sessions.values()
            for session in task_sessions
            if session.state in SessionState.INPUT_CAPABLE
        ]
        actions = self._claims.pending_actions_for_sessions(capable) if capable else {}
        return tuple(
            TaskView(
                task=task,
                task_pending_action=task_pending_action(sessions.get(task.id, ()), actions),
                primary_session_pending_action=primary_session_pending_action(
                    sessions.get(task.id, ()), actions
                ),
            )
            for task in tasks
        )

    # -- sessions --------------------------------------------------------------------------

    async def create_session(
        self, identity: Identity, task_id: str, is_primary: bool = False
    ) -> CreatedSession:
        """Start a RUNNING session with its first turn and a fresh agent token.

        Raises:
            NotFound: the task does not exist or ``identity`` may not see it.
        """
        token = AGENT_TOKEN_PREFIX + secrets.token_urlsafe(32)
        session, turn = await self._run.guarded(
            HOST_FAILED, self._create_session, identity, task_id, is_primary, token
        )
        return CreatedSession(session=session, turn=turn, agent_token=token)

    def _create_session(
        self, identity: Identity, task_id: str, is_primary: bool, token: str
    ) -> tuple[Session, Turn]:
        if not task_id or self._host.get_task(task_id) is None:
            raise NotFound(resource=Resource.TASK)
        if identity.is_scoped:
            try:
                self._authorizer.authorize_task(identity, task_id)
            except NotFound:
                raise NotFound(resource=Resource.TASK) from None
        return self._host.create_session(
            task_id, is_primary=is_primary, agent_token_hash=hash_credential(token)
        )

    async def get_session(self, identity: Identity, session_id: str) -> Session:
        """Raises ``NotFound`` when missing or not visible."""
        return await self._run.guarded(
            HOST_FAILED,
            load_authorized_session,
            self._host,
            self._authorizer,
            identity,
            session_id,
        )

    async def messages(
        self, identity: Identity, session_id: str, *, cursor: str = "", limit: int | None = None
    ) -> Page[MessageRecord]:
        """One page of the session's transcript, clarification rows included, oldest first.

        Raises:
            InvalidArgument: a corrupt ``cursor`` or a ``limit`` outside 1 to the maximum.
            NotFound: the session is missing or not visible.
        """
        return await self._message_page(identity, session_id, cursor, limit, "")

    async def resumes_for_session(
        self, identity: Identity, session_id: str, *, cursor: str = "", limit: int | None = None
    ) -> Page[MessageRecord]:
        """One page of the resume prompts the durable outbox recorded for the session, oldest
        first (raises as :meth:`messages`)."""
        return await self._message_page(identity, session_id, cursor, limit, RESUME_MESSAGE_TYPE)

    async def _message_page(
        self, identity: Identity, session_id: str, cursor: str, limit: int | None, type: str
    ) -> Page[MessageRecord]:
        page = self._page_request(cursor, limit)
        session = await self.get_session(identity, session_id)
        return await self._run.guarded(
            HOST_FAILED, self._host.page_messages, session.id, page, type
        )

    async def session_has_active_bundle(self, identity: Identity, session_id: str) -> bool:
        """The workflow guard (facts §4.10): True while a bundle on the current turn is pending;
        a host should not end the turn on its own then."""
        session = await self.get_session(identity, session_id)
        return await self._run.guarded(
            HOST_FAILED, self._claims.session_has_active_bundle, session.id
        )

    async def authenticate_agent(self, session_id: str, agent_token: str) -> Identity:
        """The identity an agent's in-session endpoint acts with: the owner of its session's
        workspace (interfaces.md MCP), when ``agent_token`` is that session's token, the
        session has not reached a terminal state (COMPLETED, FAILED, CANCELLED) and — when this
        instance was given ``users`` — the owner is an active user.

        Raises:
            NotFound: no such session, the token does not match, the session has ended, or
                its owner is deactivated or unknown (all indistinguishable).
        """
        return await self._run.guarded(
            HOST_FAILED, self._authenticate_agent, session_id, agent_token
        )

    def _authenticate_agent(self, session_id: str, agent_token: str) -> Identity:
        session = self._host.get_session(session_id) if session_id else None
        if (
            session is None
            or not session.agent_token_hash
            or not hmac.compare_digest(session.agent_token_hash, hash_credential(agent_token))
            or is_terminal_state(session.state)
        ):
            raise NotFound(resource=Resource.SESSION)
        task = self._host.get_task(session.task_id)
        workspace = (
            self._host.get_workspace(task.workspace_id) if task and task.workspace_id else None
        )
        owner = workspace.owner_id if workspace is not None else ""
        if owner and self._users is not None:
            user = self._users.get_user(owner)
            if user is None or not user.active:
                raise NotFound(resource=Resource.SESSION)
        # Issue #20: recorded as an agent (its session's token), acting as the owner.
        return Identity.agent(
            owner or UNOWNED_WORKSPACE_USER, display_name=f"agent of session {session_id}"
        )
