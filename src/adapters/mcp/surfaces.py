"""The three MCP surfaces, built on demand: servers, HTTP routes and the lifespan that runs them.

``/mcp`` is the external surface (S1, S3): ``list_pending_questions``, ``answer_question`` and
``list_tasks``. ``/mcp/session/{session_id}`` is the in-session surface, bound to that session
(S2): ``ask_user_question`` and ``list_tasks``. ``/mcp/agent`` serves the same two tools to
agents no host manages, each ask in a session created for it (:mod:`clarion.adapters.mcp.agent`).
Nothing is built at import time, and every :func:`build_mcp` call builds fresh session managers
(the SDK runs a manager once only).

Authentication (interfaces.md "Identity and authorization"), decided before the SDK sees a
request:

- disabled: every caller is the synthetic, unscoped identity (A4);
- enabled, external and agent: a personal access token (``Authorization: Bearer
  clarion_pat_…``) is required — cookies are not accepted here; an agent acts as that user;
- enabled, in-session: the session's agent token is required, and the caller acts as the owner
  of the session's workspace; its ``list_tasks`` shows that session's task only. The token
  stops working when the session reaches a terminal state or the owner is deactivated.

Anything else is 401 ``{"error": "authentication required"}`` with ``WWW-Authenticate: Bearer``.
Both protocol eras are served on each endpoint: the 2026-07-28 protocol (sessionless) and the
legacy 2025-11-25 protocol with ``Mcp-Session-Id`` sessions.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Final

import attrs
import structlog
from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import (
    StreamableHTTPSessionManager,
)
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import Tool
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from clarion.adapters.disconnect import DisconnectSignal
from clarion.adapters.http_guard import HostAllowlist, HttpGuard, request_headers
from clarion.adapters.mcp import tasks, tools
from clarion.adapters.mcp.agent import AgentBinding
from clarion.adapters.mcp.app_card import AppCard
from clarion.adapters.mcp.approval_tools import RequestTool, decide_handler
from clarion.adapters.mcp.elicitation import (
    DEFAULT_MIN_HUMAN_S,
    AgentLink,
    Elicitation,
    Setting,
)
from clarion.adapters.mcp.schemas import (
    DEFAULT_SUFFIX,
    ToolNames,
    agent_tools,
    external_tools,
    session_tools,
)
from clarion.adapters.mcp.server import (
    Authenticator,
    AuthGate,
    Caller,
    DuplicateKeyGate,
    RegisteredTool,
    ToolCall,
    ToolHandler,
    bearer_token,
    build_server,
    is_legacy_request,
)
from clarion.adapters.revocation import CHECK_INTERVAL_S, RevocationWatch
from clarion.app.usecases.agent_asks import AGENT_SCOPE, session_scope
from clarion.app.usecases.auth import Authentication, hash_credential
from clarion.app.usecases.services import Services
from clarion.domain.errors import NotFound
from clarion.domain.limits import Limits
from clarion.domain.model import Identity

EXTERNAL_PATH: Final = "/mcp"
SESSION_PATH: Final = "/mcp/session/{session_id}"
AGENT_PATH: Final = "/mcp/agent"
SERVER_VERSION: Final = "0.1.0"
PROGRESS_INTERVAL_S: Final = 15.0
_METHODS: Final = ["GET", "POST", "DELETE"]

_log = structlog.get_logger(__name__)


# The SDK's own Host/Origin check is off: :class:`HttpGuard` in front of each route is the one
# implementation, shared with REST and the inbox (same 421 / 403, plus 415 for non-JSON posts).
_SDK_CHECKS_OFF: Final = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _register(
    definitions: tuple[Tool, ...], handlers: dict[str, ToolHandler]
) -> list[RegisteredTool]:
    """Pair each advertised tool with its handler; a tool without one is a wiring bug."""
    return [RegisteredTool(tool=tool, handler=handlers[tool.name]) for tool in definitions]


def external_server(services: Services, *, names: ToolNames | None = None) -> Server[Any]:
    """The external surface's server: list and answer questions, list tasks (S1, S3)."""
    names = names or ToolNames()
    handlers = {
        names.list_pending: tools.list_pending_handler(services.listing, services.clock),
        names.answer: tools.answer_handler(services.resolver, tool=names.answer),
        names.list_tasks: tools.list_tasks_handler(services.host),
        names.decide_approval: _decide(services, names),
    }
    return build_server(
        "clarion-external",
        SERVER_VERSION,
        _register(external_tools(names), handlers),
        metrics=services.metrics,
        tracer=services.tracer,
    )


def _decide(services: Services, names: ToolNames) -> ToolHandler:
    """``decide_approval`` (issue #33): a vote through the one resolver."""
    return decide_handler(services.approvals, tool=names.decide_approval)


def _asking_tools(
    services: Services,
    names: ToolNames,
    progress_interval: float,
    session_scope: tools.SessionScope = tools.bound_session,
    *,
    ask_scope: Callable[[ToolCall], str],
    elicitation: Elicitation | None = None,
    card: AppCard | None = None,
    deciding: bool = False,
) -> list[RegisteredTool]:
    """The tools of an agent's surfaces: ask the user (in the session ``session_scope``
    picks, offering a form through ``elicitation`` when given; recorded under
    ``ask_scope(call)`` when the services keep agents' asks; an answered ask tells ``card``'s
    clients its bundle id), list tasks, request approval (issue #33) in the same session
    and — with ``deciding``, the agent surface — decide approvals."""
    handlers = {
        names.ask: tools.ask_handler(
            services.asking,
            tool=names.ask,
            progress_interval=progress_interval,
            session_scope=session_scope,
            elicitation=elicitation,
            agent_asks=services.agent_asks,
            ask_scope=ask_scope,
            result_meta=card.result_meta if card is not None else None,
            receipt=services.receipts.for_answer if services.receipts is not None else None,
        ),
        names.list_tasks: tools.list_tasks_handler(services.host),
        names.request_approval: RequestTool(
            services.approvals,
            tool=names.request_approval,
            progress_interval=progress_interval,
            session_scope=session_scope,
            wait_timeout=services.asking.ask_timeout,
            elicitation=elicitation,
        ).handle,
    }
    if deciding:
        handlers[names.decide_approval] = _decide(services, names)
        return _register(agent_tools(names), handlers)
    return _register(session_tools(names), handlers)


def _app_card(
    services: Services, names: ToolNames, ask_scope: Callable[[ToolCall], str]
) -> AppCard | None:
    """The MCP App card (issue #31) of an agent surface; it finds an ask's bundle through the
    recorded asks, so there is none without them."""
    if services.agent_asks is None:
        return None
    return AppCard(services.resolver, services.agent_asks, names=names, ask_scope=ask_scope)


def _agent_server(
    name: str,
    services: Services,
    registered: list[RegisteredTool],
    names: ToolNames,
    *,
    forms: bool,
    card: AppCard | None = None,
) -> Server[Any]:
    """An agent surface's server; with the services keeping agents' asks it also serves the
    tasks extension (:mod:`clarion.adapters.mcp.tasks`) and the MCP App card (``card``,
    :mod:`clarion.adapters.mcp.app_card`)."""
    server = build_server(
        name,
        SERVER_VERSION,
        registered,
        metrics=services.metrics,
        tracer=services.tracer,
        negotiated=card.negotiated_tools() if card is not None else None,
    )
    if card is not None:
        card.install(server)
    if services.agent_asks is not None:
        tasks.TaskMethods(
            services.agent_asks,
            services.resolver,
            tool_result=functools.partial(
                tools.settled_result,
                tool=names.ask,
                receipt=services.receipts.for_answer if services.receipts is not None else None,
            ),
            ttl_ms=None,
            forms=forms,
        ).install(server)
    return server


def build_elicitation(
    services: Services,
    setting: Setting,
    *,
    keys: tuple[bytes, ...] = (),
    min_human_s: float = DEFAULT_MIN_HUMAN_S,
    agent_link: AgentLink | None = None,
) -> Elicitation | None:
    """The one elicitation both agent endpoints offer their questions with (issue #31), or
    None when ``setting`` is off: ``keys`` seal its 2026-07-28 request state (random per
    process when empty), ``min_human_s`` is the "not shown" threshold and ``agent_link``
    makes URL-mode links (None: forms only)."""
    if setting is Setting.OFF:
        return None
    return Elicitation(
        services.resolver,
        services.clock,
        state_ttl=services.asking.ask_timeout,
        keys=keys,
        setting=setting,
        min_human_s=min_human_s,
        agent_link=agent_link,
        metrics=services.metrics,
    )


def session_server(
    services: Services,
    *,
    names: ToolNames | None = None,
    progress_interval: float = PROGRESS_INTERVAL_S,
    elicitation: Elicitation | None = None,
) -> Server[Any]:
    """The in-session surface's server: ask the user, list tasks (S2). With ``elicitation``
    the ask tool also offers its bundle in the calling client (:func:`build_elicitation`)."""
    names = names or ToolNames()

    def ask_scope(call: ToolCall) -> str:
        return session_scope(call.caller.session_id)

    card = _app_card(services, names, ask_scope)
    registered = _asking_tools(
        services,
        names,
        progress_interval,
        ask_scope=ask_scope,
        elicitation=elicitation,
        card=card,
    )
    return _agent_server(
        "clarion-session",
        services,
        registered,
        names,
        forms=elicitation is not None,
        card=card,
    )


def agent_server(
    services: Services,
    binding: AgentBinding,
    *,
    names: ToolNames | None = None,
    progress_interval: float = PROGRESS_INTERVAL_S,
    elicitation: Elicitation | None = None,
) -> Server[Any]:
    """The agent surface's server: the in-session surface's tools, each ask in the session
    ``binding`` picks for it (one per MCP session, or one per call without one), offering
    its bundle in the calling client through ``elicitation`` exactly as the in-session
    surface does."""
    names = names or ToolNames()

    def ask_scope(call: ToolCall) -> str:
        return AGENT_SCOPE

    card = _app_card(services, names, ask_scope)
    registered = _asking_tools(
        services,
        names,
        progress_interval,
        binding.session_scope,
        ask_scope=ask_scope,
        elicitation=elicitation,
        card=card,
        deciding=True,
    )
    return _agent_server(
        "clarion-agent", services, registered, names, forms=elicitation is not None, card=card
    )


def _session_id(scope: Scope) -> str:
    value = scope.get("path_params", {}).get("session_id", "")
    return value if isinstance(value, str) else ""


def external_authenticator(
    *, auth_enabled: bool, authentication: Authentication | None, services: Services
) -> Authenticator:
    """Resolve an external caller: synthetic when auth is off, else a personal access token."""
    if auth_enabled and authentication is None:
        raise ValueError("auth enabled needs an Authentication")

    async def authenticate(scope: Scope) -> Caller | None:
        if not auth_enabled:
            return Caller(identity=Identity.synthetic_admin())
        assert authentication is not None
        token = bearer_token(scope)
        if not token:
            return None
        identity = await services.runner(authentication.resolve_bearer, token)
        if identity is None:
            return None

        async def still_valid() -> bool:
            assert authentication is not None
            found = await services.runner(authentication.resolve_bearer, token)
            return found is not None

        return Caller(identity=identity, credential=hash_credential(token), still_valid=still_valid)

    return authenticate


def session_authenticator(*, auth_enabled: bool, services: Services) -> Authenticator:
    """Resolve an in-session caller: the session from the path, plus (auth on) its agent token,
    acting as the owner of the session's workspace."""

    async def authenticate(scope: Scope) -> Caller | None:
        session_id = _session_id(scope)
        if not auth_enabled:
            return Caller(identity=Identity.synthetic_admin(), session_id=session_id)
        token = bearer_token(scope)
        if not token or not session_id:
            return None
        try:
            identity = await services.host.authenticate_agent(session_id, token)
        except NotFound:
            return None

        async def still_valid() -> bool:
            try:
                await services.host.authenticate_agent(session_id, token)
            except NotFound:
                return False
            return True

        return Caller(
            identity=identity,
            session_id=session_id,
            agent=True,
            credential=hash_credential(token),
            still_valid=still_valid,
        )

    return authenticate


def too_many_sessions_message(limit: int) -> str:
    return f"too many MCP sessions: the limit is {limit} per identity (CLARION_MAX_MCP_SESSIONS)"


class IdentitySessionManager(StreamableHTTPSessionManager):
    """The SDK's session manager with a cap on the legacy sessions each identity holds.

    The SDK binds each session to the principal that opened it (``scope["user"]``, set by
    :class:`AuthGate`: the credential's digest, with the identity as subject) and closes it
    after ``session_idle_timeout`` seconds without a request. On top of that, an identity
    (the principal's subject) may hold at most ``max_sessions_per_identity`` sessions.
    """

    def __init__(
        self,
        *args: Any,
        max_sessions_per_identity: int,
        on_session_end: Callable[[str], Awaitable[None]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.max_sessions_per_identity = max_sessions_per_identity
        self.on_session_end = on_session_end
        # The same server for the 2026-07-28 methods answered at once (AT_ONCE_METHODS),
        # with JSON replies: see :meth:`serve`.
        self._at_once = StreamableHTTPSessionManager(
            app=self.app,
            json_response=True,
            stateless=True,
            security_settings=self.security_settings,
            max_request_body_size=self.max_request_body_size,
        )

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with super().run(), self._at_once.run():
            yield

    async def serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request (the ASGI app of the endpoint). A 2026-07-28 request for a
        method in :data:`AT_ONCE_METHODS` (a parked agent's ``tasks/get`` poll) is served
        with the SDK's JSON replies, without the event-stream machinery it sets up for every
        other request — a response stream, a task group and a disconnect watcher, for a read
        that answers at once (#35: about 0.4 ms of a 1.4 ms poll). The bytes are those the
        event-stream path sends for a reply ready before its first ping: one
        ``application/json`` JSON-RPC response with the same status. The SDK still checks
        the header against the body's method and refuses a mismatch."""
        manager = self._at_once if _answered_at_once(scope) else self
        await manager.asgi_app(scope, receive, send)

    def is_open(self, session_id: str) -> bool:
        """Whether the legacy session ``session_id`` is still served."""
        return session_id in self._server_instances

    def sessions_of(self, subject: str) -> int:
        """How many open legacy sessions belong to ``subject``."""
        owners = self._session_owners.values()
        return sum(1 for owner in owners if owner.get("subject") == subject)

    def _admit_session(self, requestor: AuthorizationContext | None) -> Any:
        # Checked under the SDK's creation lock, so concurrent opens cannot overshoot; the
        # gate below has already answered 429 in every case but such a race (then the SDK
        # answers 503 "Too many open sessions").
        subject = requestor.get("subject") if requestor is not None else None
        if subject is not None and self.sessions_of(subject) >= self.max_sessions_per_identity:
            return None
        return super()._admit_session(requestor)

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        # The SDK calls this however a session ends — DELETE, idle expiry, a crash, the
        # manager stopping — sometimes twice; ``on_session_end`` must be idempotent.
        await super()._discard_session(session_id, transport)
        if self.on_session_end is not None:
            await self.on_session_end(session_id)


# The 2026-07-28 methods whose handler answers at once and never streams a notification.
AT_ONCE_METHODS: Final = frozenset({"tasks/get"})


def _answered_at_once(scope: Scope) -> bool:
    headers = request_headers(scope)
    return headers.get("mcp-method") in AT_ONCE_METHODS and not is_legacy_request(headers)


class SessionLimitGate:
    """Pure ASGI wrapper answering 429 to a request that would open one legacy session too
    many for its identity (a 2025-era POST without ``Mcp-Session-Id``)."""

    def __init__(self, app: ASGIApp, manager: IdentitySessionManager) -> None:
        self._app = app
        self._manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._opens_session(scope):
            user = scope.get("user")
            subject = user.access_token.subject if isinstance(user, AuthenticatedUser) else None
            limit = self._manager.max_sessions_per_identity
            if subject is not None and self._manager.sessions_of(subject) >= limit:
                response = JSONResponse({"error": too_many_sessions_message(limit)}, 429)
                await response(scope, receive, send)
                return
        await self._app(scope, receive, send)

    def _opens_session(self, scope: Scope) -> bool:
        if self._manager.stateless or scope.get("method") != "POST":
            return False
        headers = request_headers(scope)
        return is_legacy_request(headers) and "mcp-session-id" not in headers


@attrs.frozen
class McpSurfaces:
    """The three surfaces, ready to mount: add ``routes`` to the host application and enter
    :meth:`lifespan` in its lifespan (a mounted sub-application's lifespan would never run).
    ``agents`` maps the agent surface's MCP sessions to their Clarion sessions."""

    routes: tuple[BaseRoute, ...]
    external: Server[Any]
    session: Server[Any]
    agent: Server[Any]
    agents: AgentBinding
    managers: tuple[IdentitySessionManager, ...]

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run the session managers for as long as the host application serves requests."""
        async with AsyncExitStack() as stack:
            for manager in self.managers:
                await stack.enter_async_context(manager.run())
            yield


def build_mcp(
    services: Services,
    *,
    auth_enabled: bool,
    authentication: Authentication | None,
    tool_suffix: str = DEFAULT_SUFFIX,
    progress_interval: float = PROGRESS_INTERVAL_S,
    allowed_hosts: HostAllowlist | None = None,
    external_path: str = EXTERNAL_PATH,
    session_path: str = SESSION_PATH,
    agent_path: str = AGENT_PATH,
    agent_workspace: str | None = None,
    legacy_sessions: bool = True,
    limits: Limits | None = None,
    elicitation: Setting = Setting.AUTO,
    elicitation_keys: tuple[bytes, ...] = (),
    elicitation_min_human_s: float = DEFAULT_MIN_HUMAN_S,
    agent_link: AgentLink | None = None,
    revocation_interval: float = CHECK_INTERVAL_S,
) -> McpSurfaces:
    """Build the three surfaces over ``services``.

    ``tool_suffix`` names the tools (``list_tasks`` + suffix); ``progress_interval`` is the
    ask tool's keep-alive period (≤ 15 s); ``allowed_hosts`` are the ``Host`` names the
    endpoints answer to (:class:`~clarion.adapters.http_guard.HttpGuard`, which also refuses
    foreign origins and non-JSON posts; default loopback names only) — a host serving other
    names must pass them. ``session_path`` must contain ``{session_id}``. ``legacy_sessions`` keeps
    ``Mcp-Session-Id`` sessions for 2025-11-25 clients (in memory: several processes behind one
    address then need sticky routing); False serves that era statelessly. The 2026-07-28
    protocol is sessionless either way. ``limits`` (default ``services.limits``) bound request
    bodies, legacy sessions per identity and their idle time. ``agent_workspace``, when
    given, replaces the workspace the agent surface (``agent_path``) creates its tasks in,
    which is otherwise ``services.agents``' own (``build_services(agent_workspace=...)``,
    ``CLARION_AGENT_WORKSPACE``; "" gives each caller its own "Agents" workspace).
    ``elicitation`` (``CLARION_ELICITATION``) lets the ask tool of both agent endpoints
    also offer its bundle in the calling client (a form, or with ``agent_link`` a URL-mode
    link to an answer page; :mod:`clarion.adapters.mcp.elicitation`); ``elicitation_keys``
    (``CLARION_ELICITATION_KEYS``) seal that offer's 2026-07-28 request state, shared by
    replicas so a retry may reach any of them; ``elicitation_min_human_s``
    (``CLARION_ELICITATION_MIN_HUMAN_MS``) is the "not shown" threshold.
    ``revocation_interval`` is how often a running request's credential is checked again
    (issue #29 S8: revoking a token ends its running asks and streams within about that).

    Raises:
        ValueError: auth is enabled without an ``Authentication``, or ``session_path`` has no
            ``{session_id}``.
    """
    _check_settings(session_path, progress_interval)
    names = ToolNames(tool_suffix)
    external = external_server(services, names=names)
    offer = build_elicitation(
        services,
        elicitation,
        keys=elicitation_keys,
        min_human_s=elicitation_min_human_s,
        agent_link=agent_link,
    )
    endpoints = _Endpoints(
        limits if limits is not None else services.limits,
        legacy_sessions=legacy_sessions,
        allowed_hosts=allowed_hosts,
        revocation=RevocationWatch(interval=revocation_interval),
    )
    external_manager = endpoints.manager(external)
    asking = _asking_surfaces(services, names, endpoints, progress_interval, offer, agent_workspace)
    external_auth, session_auth = _authenticators(auth_enabled, authentication, services)
    return McpSurfaces(
        routes=(
            endpoints.route(external_path, external_manager, external_auth),
            endpoints.route(session_path, asking.session_manager, session_auth),
            endpoints.route(agent_path, asking.agent_manager, external_auth),
        ),
        external=external,
        session=asking.session,
        agent=asking.agent,
        agents=asking.binding,
        managers=(external_manager, asking.session_manager, asking.agent_manager),
    )


def _check_settings(session_path: str, progress_interval: float) -> None:
    """The checks :func:`build_mcp` makes before building anything.

    Raises:
        ValueError: ``session_path`` has no ``{session_id}``, or ``progress_interval`` is not
            in (0, 15] seconds.
    """
    if "{session_id}" not in session_path:
        raise ValueError("session_path must contain {session_id}")
    if not 0 < progress_interval <= PROGRESS_INTERVAL_S:
        raise ValueError("progress_interval must be in (0, 15] seconds")


def _authenticators(
    auth_enabled: bool, authentication: Authentication | None, services: Services
) -> tuple[Authenticator, Authenticator]:
    """The external (and agent) surfaces' authenticator, then the in-session surface's.

    Raises:
        ValueError: auth is enabled without an ``Authentication``.
    """
    external = external_authenticator(
        auth_enabled=auth_enabled, authentication=authentication, services=services
    )
    return external, session_authenticator(auth_enabled=auth_enabled, services=services)


@attrs.frozen
class _Endpoints:
    """What the three endpoints share: their session managers' settings and the stack of
    checks in front of each, with one watch on the credentials of running requests."""

    limits: Limits
    legacy_sessions: bool
    allowed_hosts: HostAllowlist | None
    revocation: RevocationWatch

    def manager(
        self,
        server: Server[Any],
        on_session_end: Callable[[str], Awaitable[None]] | None = None,
    ) -> IdentitySessionManager:
        """A fresh session manager for ``server`` (the SDK runs a manager once only)."""
        return IdentitySessionManager(
            app=server,
            security_settings=_SDK_CHECKS_OFF,
            stateless=not self.legacy_sessions,
            session_idle_timeout=self.limits.mcp_session_idle_s,
            max_request_body_size=self.limits.max_body_bytes,
            max_sessions_per_identity=self.limits.max_mcp_sessions,
            on_session_end=on_session_end,
        )

    def route(
        self,
        path: str,
        manager: IdentitySessionManager,
        authenticate: Authenticator,
    ) -> Route:
        """One endpoint's stack: Host/Origin guard, credential (watched while the request
        runs), duplicate JSON keys, the per-identity session cap, then the SDK (whose reads
        of ``receive`` tell a legacy call at once that its client left)."""
        inner = SessionLimitGate(DisconnectSignal(manager.serve), manager)
        checked = AuthGate(
            DuplicateKeyGate(inner, max_body=self.limits.max_body_bytes),
            authenticate,
            self.revocation,
        )
        return Route(path, HttpGuard(checked, allowed_hosts=self.allowed_hosts), methods=_METHODS)


@attrs.frozen
class _AskingSurfaces:
    """The two surfaces agents ask on: the in-session one and the agent one, each with its
    session manager, and the agent surface's binding of MCP sessions to Clarion sessions."""

    session: Server[Any]
    session_manager: IdentitySessionManager
    agent: Server[Any]
    agent_manager: IdentitySessionManager
    binding: AgentBinding


def _asking_surfaces(
    services: Services,
    names: ToolNames,
    endpoints: _Endpoints,
    progress_interval: float,
    elicitation: Elicitation | None,
    agent_workspace: str | None,
) -> _AskingSurfaces:
    """Both asking surfaces, offering questions through ``elicitation``; the agent surface
    creates its tasks in ``agent_workspace`` when given, and its session manager ends a
    binding with its MCP session."""
    session = session_server(
        services, names=names, progress_interval=progress_interval, elicitation=elicitation
    )
    agent_sessions = (
        services.agents
        if agent_workspace is None
        else attrs.evolve(services.agents, workspace_id=agent_workspace)
    )
    # The binding asks the agent manager (built next, around the server that uses the
    # binding) which MCP sessions are open.
    binding = AgentBinding(agent_sessions, is_open=lambda mcp_id: agent_manager.is_open(mcp_id))
    agent = agent_server(
        services, binding, names=names, progress_interval=progress_interval, elicitation=elicitation
    )
    agent_manager = endpoints.manager(agent, binding.session_ended)
    return _AskingSurfaces(
        session=session,
        session_manager=endpoints.manager(session),
        agent=agent,
        agent_manager=agent_manager,
        binding=binding,
    )
