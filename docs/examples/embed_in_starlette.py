"""A host service that embeds Clarion under ``/clarion`` in its own Starlette application.

The host owns who belongs to which team and which team owns each task; its
:class:`TeamAuthorizer` (a :class:`clarion.ports.TaskAuthorizer`) applies those rules to every
Clarion surface. When an answer arrives after the asking agent stopped waiting, Clarion hands
the resume to the host's :class:`ResumeQueue` (wrapped in a ``CallableResumeDispatcher``), and
every bundle update passes through the host's :class:`HostEvents` publisher on its way to
Clarion's event stream.

Nothing is built at import time. Serve it with uvicorn's factory mode, from ``docs/examples``::

    ../../.venv/bin/uvicorn --factory embed_in_starlette:create_app --port 8000

``tests/docs/test_examples.py`` drives :func:`create_host` and checks every claim above.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from clarion.adapters.events import InProcessEventBus
from clarion.adapters.events.fanout import Subscription
from clarion.adapters.resume import CallableResumeDispatcher
from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings
from clarion.app.usecases.ask import AskResult
from clarion.domain import (
    NOT_FOUND_MESSAGE,
    Identity,
    NotFound,
    QuestionDraft,
    Visibility,
)
from clarion.ports import Event, ResumeRequest

PREFIX = "/clarion"
HOST = Identity.internal()  # the host's own code acts unscoped, like any in-process caller


@attrs.define
class Teams:
    """The host's own records. Clarion never writes here; it only asks the authorizer."""

    members: dict[str, set[str]] = attrs.field(factory=dict)  # team → Clarion user ids
    workspace_of: dict[str, str] = attrs.field(factory=dict)  # team → Clarion workspace id
    team_of_task: dict[str, str] = attrs.field(factory=dict)  # Clarion task id → team

    def teams_of(self, user_id: str | None) -> set[str]:
        return {team for team, people in self.members.items() if user_id in people}


class TeamAuthorizer:
    """A person sees the tasks of the teams they belong to; nobody else's.

    Every refusal is the same :class:`NotFound` as a missing task, so a caller cannot tell a
    task they may not see from one that does not exist (spec A3, A5a). ``checks`` records
    what Clarion asked, which the tests read.
    """

    def __init__(self, teams: Teams) -> None:
        self._teams = teams
        self.checks: list[tuple[str | None, str]] = []

    def authorize_task(self, identity: Identity, task_id: str) -> None:
        """Return when ``identity`` may see ``task_id``.

        Raises:
            NotFound: the task is unknown to the host or belongs to another team.
        """
        self.checks.append((identity.user_id, task_id))
        if not identity.is_scoped:
            return
        team = self._teams.team_of_task.get(task_id)
        if team is None or team not in self._teams.teams_of(identity.user_id):
            raise NotFound(NOT_FOUND_MESSAGE)

    def visibility(self, identity: Identity) -> Visibility:
        """The workspaces of the caller's teams (the pending list filters on these, L1a)."""
        if not identity.is_scoped:
            return Visibility.everything()
        teams = self._teams.teams_of(identity.user_id)
        return Visibility.only(
            {self._teams.workspace_of[team] for team in teams if team in self._teams.workspace_of}
        )


class ResumeQueue:
    """The host's agent runner, seen from Clarion: a resume is accepted once it is queued.

    Raising refuses it, and Clarion rolls the claim back so the answer can be given again
    (spec R7); the host refuses resumes for sessions it has ``paused``.
    """

    def __init__(self) -> None:
        self.accepted: list[ResumeRequest] = []
        self.paused: set[str] = set()

    async def __call__(self, request: ResumeRequest) -> None:
        if request.session_id in self.paused:
            raise RuntimeError(f"session {request.session_id} is paused")
        self.accepted.append(request)


class HostEvents:
    """An event publisher that keeps the host's audit trail and feeds Clarion's event stream.

    ``build_clarion(events=...)`` needs a publisher that can also be subscribed to (the REST
    event stream and the web inbox read it), so this one delegates both to an in-process bus.
    """

    def __init__(self) -> None:
        self._bus = InProcessEventBus()
        self.audit: list[tuple[str, str]] = []  # (kind, pending_id)

    def publish(self, event: Event) -> None:
        self.audit.append((event.kind, event.pending_id))
        self._bus.publish(event)

    def subscribe(self) -> Subscription:
        return self._bus.subscribe()


@attrs.frozen
class Person:
    """Someone who answers: their Clarion user id and personal access token."""

    user_id: str
    token: str = attrs.field(repr=False)


@attrs.frozen
class AgentSession:
    """A session the host started for one of its agents (the token authenticates the agent on
    ``/clarion/mcp/session/<session_id>``)."""

    task_id: str
    session_id: str
    agent_token: str = attrs.field(repr=False)


@attrs.define
class HostService:
    """The host application and the handles the host's own code uses."""

    app: Starlette
    clarion: Clarion
    teams: Teams
    authorizer: TeamAuthorizer
    resumes: ResumeQueue
    events: HostEvents

    def add_person(self, name: str, team: str) -> Person:
        """Register a person in a team, with the personal access token they answer with."""
        user = self.clarion.authentication.create_user(name)
        self.teams.members.setdefault(team, set()).add(user.id)
        issued = self.clarion.authentication.issue_token(user.id, name="host")
        return Person(user_id=user.id, token=issued.token)

    async def start_agent(self, team: str, title: str) -> AgentSession:
        """Create the task (owned by ``team``) and a running session for an agent."""
        workspace_id = self.teams.workspace_of.get(team)
        if workspace_id is None:
            # An agent on its in-session endpoint acts as the owner of its task's workspace,
            # so each team's workspace is owned by a member standing for the team's agents.
            agents = self.clarion.authentication.create_user(f"{team} agents")
            self.teams.members.setdefault(team, set()).add(agents.id)
            workspace = await self.clarion.services.host.create_workspace(HOST, team, agents.id)
            workspace_id = self.teams.workspace_of[team] = workspace.id
        task = await self.clarion.services.host.create_task(HOST, title, workspace_id)
        self.teams.team_of_task[task.id] = team
        created = await self.clarion.services.host.create_session(HOST, task.id)
        return AgentSession(task.id, created.session.id, created.agent_token)

    async def ask_later(
        self, session_id: str, questions: Sequence[QuestionDraft], context: str = ""
    ) -> str:
        """Ask without waiting (the agent goes on); the answer arrives as a resume."""
        return await self.clarion.services.asking.create(HOST, session_id, questions, context)

    async def ask_and_wait(
        self, session_id: str, questions: Sequence[QuestionDraft], context: str = ""
    ) -> AskResult:
        """Ask and block until someone answers, as ``ask_user_question_kandev`` does."""
        return await self.clarion.services.asking.ask(HOST, session_id, questions, context)


async def _home(request: Request) -> Response:
    return JSONResponse({"service": "host", "clarion": PREFIX})


def create_host(
    database_url: str = "memory://", *, allowed_hosts: tuple[str, ...] = ()
) -> HostService:
    """Build the host with Clarion mounted at :data:`PREFIX`.

    ``allowed_hosts`` are the names (besides loopback) clients use to reach the MCP endpoints,
    which check the ``Host`` header against DNS rebinding.
    """
    teams = Teams()
    authorizer = TeamAuthorizer(teams)
    resumes = ResumeQueue()
    events = HostEvents()
    clarion = build_clarion(
        Settings(database_url=database_url, auth_enabled=True, allowed_hosts=allowed_hosts),
        authorizer=authorizer,
        dispatcher=CallableResumeDispatcher(resumes),
        events=events,
    )
    inner = clarion.asgi_app

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # A mounted application's lifespan never runs on its own: Clarion's (MCP session
        # managers, startup reconciliation, event streams) runs inside the host's.
        try:
            async with inner.router.lifespan_context(inner):
                yield
        finally:
            clarion.close()

    app = Starlette(
        routes=[Route("/", _home, methods=["GET"]), Mount(PREFIX, app=inner)],
        lifespan=lifespan,
    )
    return HostService(
        app=app,
        clarion=clarion,
        teams=teams,
        authorizer=authorizer,
        resumes=resumes,
        events=events,
    )


def create_app() -> Starlette:
    """The factory ``uvicorn --factory`` calls."""
    return create_host("sqlite:///./host-clarion.db").app
