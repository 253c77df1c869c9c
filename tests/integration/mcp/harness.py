"""A Clarion server on a real socket, and the MCP and HTTP steps the MCP tests share.

``McpWorld`` assembles the application the way a composition root does — SQL repositories
(SQLite file or PostgreSQL), the in-process waiters and event bus, a recording resume
dispatcher, ``build_services``, the REST surface and both MCP surfaces behind the REST
authentication middleware — and :func:`serving` runs it under uvicorn on a free 127.0.0.1 port.
Clients are the SDK's ``Client`` over ``streamable_http_client`` (``mode="auto"`` lands on the
2026-07-28 protocol, ``mode="legacy"`` on 2025-11-25 with sessions) and plain ``httpx2``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

import anyio
import attrs
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Implementation
from sqlalchemy.engine import Engine
from starlette.applications import Starlette

from clarion.adapters.events.fanout import InProcessEventBus
from clarion.adapters.mcp import McpSurfaces, build_mcp
from clarion.adapters.mcp.elicitation import DEFAULT_MIN_HUMAN_S, Setting
from clarion.adapters.mcp.errors import ERROR_META_KEY
from clarion.adapters.memory import InMemoryAnswerLinkStore
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.rest import create_rest_app
from clarion.adapters.resume import CallableResumeDispatcher
from clarion.adapters.sql import (
    SqlAskRecords,
    SqlClaimRepository,
    SqlHostRepository,
    SqlTokenStore,
    create_engine,
    upgrade_database,
)
from clarion.adapters.system import SystemClock, UuidIds
from clarion.adapters.web import web_routes
from clarion.app.usecases.answer_links import AnswerLinks
from clarion.app.usecases.auth import Authentication
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.runner import Runner
from clarion.app.usecases.services import Services, build_services
from clarion.domain.host import Session, Task, Workspace
from clarion.domain.limits import Limits
from clarion.domain.model import Identity
from clarion.domain.questions import OptionDraft, QuestionDraft
from clarion.ports.events import Event
from clarion.ports.receipts import ReceiptSigner
from clarion.ports.resume import ResumeRequest
from clarion.ports.system import Clock
from tests.sockets import serving as serving_app

ASK = "ask_user_question_kandev"
ANSWER = "answer_question_kandev"
LIST_PENDING = "list_pending_questions_kandev"
LIST_TASKS = "list_tasks_kandev"
MODES = ("auto", "legacy")
PROTOCOL_OF_MODE = {"auto": "2026-07-28", "legacy": "2025-11-25"}


def question_args(count: int = 1, *, options: int = 2, prefix: str = "Question") -> list[Any]:
    """``ask_user_question`` questions: ids ``q<i>``, option ids assigned ``q<i>_opt<j>``."""
    return [
        {
            "id": f"q{i}",
            "title": f"T{i}",
            "prompt": f"{prefix} {i}?",
            "options": [
                {"label": f"Choice {j}", "description": f"Means {j}"} for j in range(1, options + 1)
            ],
        }
        for i in range(1, count + 1)
    ]


def drafts(count: int = 1, *, prefix: str = "Question") -> tuple[QuestionDraft, ...]:
    """The same question set as use-case drafts (for seeding bundles without an agent)."""
    return tuple(
        QuestionDraft(
            id=f"q{i}",
            title=f"T{i}",
            prompt=f"{prefix} {i}?",
            options=tuple(
                OptionDraft(label=f"Choice {j}", description=f"Means {j}") for j in (1, 2)
            ),
        )
        for i in range(1, count + 1)
    )


def answers_for(count: int = 1, *, option: int = 1, text: str = "") -> list[dict[str, Any]]:
    return [
        {"question_id": f"q{i}", "selected_options": [f"q{i}_opt{option}"], "custom_text": text}
        for i in range(1, count + 1)
    ]


def structured(result: CallToolResult) -> dict[str, Any]:
    """A successful result's structured content, checked against its text twin."""
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    text = result.content[0]
    assert text.type == "text"
    assert json.loads(text.text) == data
    return data


def tool_error(result: CallToolResult) -> tuple[str, dict[str, Any]]:
    """A tool error's text and its ``_meta`` error details (``code``, ``field``, ...)."""
    assert result.is_error, result.structured_content
    text = result.content[0]
    assert text.type == "text"
    details = (result.meta or {}).get(ERROR_META_KEY)
    assert isinstance(details, dict)
    return text.text, details


@attrs.frozen
class Person:
    """A user with a personal access token."""

    identity: Identity
    token: str


@attrs.frozen
class Agent:
    """A session with its agent token, in a task of a workspace."""

    workspace: Workspace | None
    task: Task
    session: Session
    token: str


@attrs.define
class McpWorld:
    """Services over SQL, the REST + MCP application, and what the resume dispatcher saw."""

    services: Services
    authentication: Authentication
    app: Starlette
    mcp: McpSurfaces
    bus: InProcessEventBus
    engine: Engine
    auth_enabled: bool
    host_repository: SqlHostRepository
    resumes: list[ResumeRequest] = attrs.field(factory=list)
    served: list[str] = attrs.field(factory=list)  # the base URL once served (answer links)
    base_url: str = ""

    @classmethod
    def build(
        cls,
        database_url: str,
        *,
        auth_enabled: bool = True,
        progress_interval: float = 15.0,
        ask_timeout: float = 120.0,
        legacy_sessions: bool = True,
        limits: Limits | None = None,
        agent_workspace: str = "",
        elicitation: bool | Setting = True,
        authentication_class: type[Authentication] = Authentication,
        revocation_interval: float = 2.0,
        clock: Clock | None = None,
        elicitation_min_human_s: float = DEFAULT_MIN_HUMAN_S,
        receipt_signer: ReceiptSigner | None = None,
    ) -> McpWorld:
        """A world on ``database_url``. ``elicitation`` True is ``CLARION_ELICITATION=auto``
        (False: off); URL-mode links go to this world's answer page (``/answer/<token>``)."""
        engine = create_engine(database_url)
        upgrade_database(engine)
        clock, ids = clock if clock is not None else SystemClock(), UuidIds()
        host = SqlHostRepository(engine, clock, ids)
        bus = InProcessEventBus()
        resumes: list[ResumeRequest] = []

        async def record(request: ResumeRequest) -> None:
            resumes.append(request)

        tokens = SqlTokenStore(engine, clock, ids)
        claims = SqlClaimRepository(engine, clock, ids)
        services = build_services(
            claims=claims,
            host=host,
            authorizer=HostTaskAuthorizer(host),
            waiters=InMemoryWaiters(),
            dispatcher=CallableResumeDispatcher(record),
            events=bus,
            clock=clock,
            ids=ids,
            ask_timeout=ask_timeout,
            users=tokens,
            limits=limits,
            ask_records=SqlAskRecords(engine),
            receipt_signer=receipt_signer,
        )
        authentication = authentication_class(tokens, clock, ids)
        links = AnswerLinks(
            resolver=services.resolver,
            claims=claims,
            users=tokens,
            store=InMemoryAnswerLinkStore(),
            clock=clock,
            runner=Runner(),
            base_url="",  # made absolute with the served address (below)
            auth_enabled=auth_enabled,
        )
        served: list[str] = []

        def agent_link(identity: Identity, pending_id: str) -> str:
            return served[0] + links.agent_link_for(
                identity, pending_id, ttl=timedelta(seconds=ask_timeout)
            )

        if isinstance(elicitation, bool):
            elicitation = Setting.AUTO if elicitation else Setting.OFF
        surfaces = build_mcp(
            services,
            auth_enabled=auth_enabled,
            authentication=authentication,
            progress_interval=progress_interval,
            legacy_sessions=legacy_sessions,
            agent_workspace=agent_workspace,
            elicitation=elicitation,
            elicitation_min_human_s=elicitation_min_human_s,
            agent_link=agent_link,
            revocation_interval=revocation_interval,
        )
        app = create_rest_app(
            services,
            auth_enabled=auth_enabled,
            authentication=authentication,
            event_source=bus,
            extra_routes=(*surfaces.routes, *web_routes(links)),
            lifespan=lambda _app: surfaces.lifespan(),
        )
        return cls(
            services=services,
            authentication=authentication,
            app=app,
            mcp=surfaces,
            bus=bus,
            engine=engine,
            auth_enabled=auth_enabled,
            host_repository=host,
            resumes=resumes,
            served=served,
        )

    # -- seeding through the use cases -------------------------------------------------------

    def person(self, name: str) -> Person:
        user = self.authentication.create_user(name)
        issued = self.authentication.issue_token(user.id, name=f"{name}-token")
        return Person(identity=Identity.user(user.id), token=issued.token)

    async def workspace(self, owner: Person, name: str = "ws") -> Workspace:
        return await self.services.host.create_workspace(owner.identity, name)

    async def agent(self, owner: Person, workspace: Workspace | None = None) -> Agent:
        """A primary RUNNING session in a new task (in ``workspace``, or a new one)."""
        workspace = workspace or await self.workspace(owner)
        task = await self.services.host.create_task(owner.identity, "task", workspace.id)
        created = await self.services.host.create_session(owner.identity, task.id, True)
        return Agent(
            workspace=workspace, task=task, session=created.session, token=created.agent_token
        )

    async def bundle(self, owner: Person, agent: Agent, count: int = 1, prefix: str = "Q") -> str:
        """A pending bundle nobody waits on (REST ``POST /request`` semantics)."""
        return await self.services.asking.create(
            owner.identity, agent.session.id, drafts(count, prefix=prefix), "context"
        )

    # -- endpoints ---------------------------------------------------------------------------

    @property
    def external_url(self) -> str:
        return f"{self.base_url}/mcp"

    @property
    def agent_url(self) -> str:
        return f"{self.base_url}/mcp/agent"

    def session_url(self, session_id: str) -> str:
        return f"{self.base_url}/mcp/session/{session_id}"

    def respond_url(self, pending_id: str) -> str:
        return f"{self.base_url}/api/v1/clarification/{pending_id}/respond"


@contextlib.asynccontextmanager
async def serving(world: McpWorld) -> AsyncIterator[McpWorld]:
    """Serve ``world.app`` on a free 127.0.0.1 port for the duration of the block.

    The socket is bound and listening before uvicorn starts, so clients may connect at once:
    their connections wait in the backlog until the application (and its lifespan) is up.
    """
    try:
        async with serving_app(world.app) as url:
            world.base_url = url
            world.served[:] = [url]
            yield world
    finally:
        world.engine.dispose()


def http_client(token: str = "") -> httpx2.AsyncClient:
    """An HTTP client with a long read timeout (a blocked ask can be silent between pings)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))


@contextlib.asynccontextmanager
async def mcp_client(
    url: str, *, token: str = "", mode: str = "auto", client_info: Implementation | None = None
) -> AsyncIterator[Client]:
    """The SDK client on ``url`` in ``mode`` (``auto`` → 2026-07-28, ``legacy`` → sessions),
    reporting ``client_info`` (the SDK's default when None)."""
    async with (
        http_client(token) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=mode, client_info=client_info
        ) as client,
    ):
        assert client.protocol_version == PROTOCOL_OF_MODE[mode]
        yield client


@contextlib.asynccontextmanager
async def watching(world: McpWorld) -> AsyncIterator[EventLog]:
    """Record the events published while the block runs; wait on them with ``wait_for``."""
    log = EventLog()
    subscription = world.bus.subscribe()
    async with anyio.create_task_group() as tasks:

        async def pump() -> None:
            async for event in subscription:
                log.add(event)

        tasks.start_soon(pump)
        try:
            yield log
        finally:
            tasks.cancel_scope.cancel()


class EventLog:
    """Events seen so far, and a way to wait for one without sleeping."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = anyio.Event()

    def add(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, kind: str, *, since: int = 0, **where: str) -> Event:
        """The first event of ``kind`` matching ``where`` among those after the first
        ``since``, waiting for it if need be."""
        with anyio.fail_after(20):
            while True:
                for event in self.events[since:]:
                    if event.kind == kind and _matches(event, where):
                        return event
                await self._changed.wait()


def _matches(event: Event, where: Mapping[str, str]) -> bool:
    return all(getattr(event, key) == value for key, value in where.items())
