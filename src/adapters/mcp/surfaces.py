"""The two MCP surfaces, built on demand: servers, HTTP routes and the lifespan that runs them.

``/mcp`` is the external surface (S1, S3): ``list_pending_questions``, ``answer_question`` and
``list_tasks``. ``/mcp/session/{session_id}`` is the in-session surface, bound to that session
(S2): ``ask_user_question`` and ``list_tasks``. Nothing is built at import time, and every
:func:`build_mcp` call builds fresh session managers (the SDK runs a manager once only).

Authentication (interfaces.md "Identity and authorization"), decided before the SDK sees a
request:

- disabled: every caller is the synthetic, unscoped identity (A4);
- enabled, external: a personal access token (``Authorization: Bearer clarion_pat_…``) is
  required — cookies are not accepted here;
- enabled, in-session: the session's agent token is required, and the caller acts as the owner
  of the session's workspace; its ``list_tasks`` shows that session's task only. The token
  stops working when the session reaches a terminal state or the owner is deactivated.

Anything else is 401 ``{"error": "authentication required"}`` with ``WWW-Authenticate: Bearer``.
Both protocol eras are served on each endpoint: the 2026-07-28 protocol (sessionless) and the
legacy 2025-11-25 protocol with ``Mcp-Session-Id`` sessions.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Final

import attrs
import structlog
from mcp.server import Server
from mcp.server.streamable_http_manager import (
    StreamableHTTPASGIApp,
    StreamableHTTPSessionManager,
)
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import Tool
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from clarion.adapters.mcp import tools
from clarion.adapters.mcp.elicitation import Elicitation
from clarion.adapters.mcp.schemas import DEFAULT_SUFFIX, ToolNames, external_tools, session_tools
from clarion.adapters.mcp.server import (
    Authenticator,
    AuthGate,
    Caller,
    RegisteredTool,
    ToolHandler,
    bearer_token,
    build_server,
)
from clarion.app.services import Services
from clarion.app.usecases.auth import Authentication
from clarion.domain.errors import NotFound
from clarion.domain.model import Identity

EXTERNAL_PATH: Final = "/mcp"
SESSION_PATH: Final = "/mcp/session/{session_id}"
SERVER_VERSION: Final = "0.1.0"
PROGRESS_INTERVAL_S: Final = 15.0
_METHODS: Final = ["GET", "POST", "DELETE"]

_log = structlog.get_logger(__name__)


def local_transport_security() -> TransportSecuritySettings:
    """DNS-rebinding protection for a server reached as localhost (the SDK's own default for
    a loopback bind): only loopback ``Host`` and ``Origin`` values are accepted."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


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
    }
    return build_server(
        "clarion-external", SERVER_VERSION, _register(external_tools(names), handlers)
    )


def session_server(
    services: Services,
    *,
    names: ToolNames | None = None,
    progress_interval: float = PROGRESS_INTERVAL_S,
    elicitation: bool = True,
) -> Server[Any]:
    """The in-session surface's server: ask the user, list tasks (S2). With ``elicitation``
    the ask tool also offers its bundle as a form to clients that declared form elicitation."""
    names = names or ToolNames()
    offer = (
        Elicitation(services.asking, services.resolver, state_ttl=services.asking.ask_timeout)
        if elicitation
        else None
    )
    handlers = {
        names.ask: tools.ask_handler(
            services.asking,
            tool=names.ask,
            progress_interval=progress_interval,
            elicitation=offer,
        ),
        names.list_tasks: tools.list_tasks_handler(services.host),
    }
    return build_server(
        "clarion-session", SERVER_VERSION, _register(session_tools(names), handlers)
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
        return Caller(identity=identity) if identity is not None else None

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
        return Caller(identity=identity, session_id=session_id, agent=True)

    return authenticate


@attrs.frozen
class McpSurfaces:
    """Both surfaces, ready to mount: add ``routes`` to the host application and enter
    :meth:`lifespan` in its lifespan (a mounted sub-application's lifespan would never run)."""

    routes: tuple[BaseRoute, ...]
    external: Server[Any]
    session: Server[Any]
    managers: tuple[StreamableHTTPSessionManager, ...]

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
    transport_security: TransportSecuritySettings | None = None,
    external_path: str = EXTERNAL_PATH,
    session_path: str = SESSION_PATH,
    legacy_sessions: bool = True,
    elicitation: bool = True,
) -> McpSurfaces:
    """Build both surfaces over ``services``.

    ``tool_suffix`` names the tools (``list_tasks`` + suffix); ``progress_interval`` is the
    ask tool's keep-alive period (≤ 15 s); ``transport_security`` is the SDK's Host/Origin
    check, :func:`local_transport_security` when None — a host serving other names must pass
    its own. ``session_path`` must contain ``{session_id}``. ``legacy_sessions`` keeps
    ``Mcp-Session-Id`` sessions for 2025-11-25 clients (in memory: several processes behind one
    address then need sticky routing); False serves that era statelessly. The 2026-07-28
    protocol is sessionless either way. ``elicitation`` (``CLARION_ELICITATION``) lets the ask
    tool also offer its bundle as a form to clients that declared form elicitation.

    Raises:
        ValueError: auth is enabled without an ``Authentication``, or ``session_path`` has no
            ``{session_id}``.
    """
    if "{session_id}" not in session_path:
        raise ValueError("session_path must contain {session_id}")
    if not 0 < progress_interval <= PROGRESS_INTERVAL_S:
        raise ValueError("progress_interval must be in (0, 15] seconds")
    names = ToolNames(tool_suffix)
    security = transport_security if transport_security is not None else local_transport_security()
    external = external_server(services, names=names)
    session = session_server(
        services, names=names, progress_interval=progress_interval, elicitation=elicitation
    )
    external_manager = StreamableHTTPSessionManager(
        app=external, security_settings=security, stateless=not legacy_sessions
    )
    session_manager = StreamableHTTPSessionManager(
        app=session, security_settings=security, stateless=not legacy_sessions
    )
    external_gate = AuthGate(
        StreamableHTTPASGIApp(external_manager),
        external_authenticator(
            auth_enabled=auth_enabled, authentication=authentication, services=services
        ),
    )
    session_gate = AuthGate(
        StreamableHTTPASGIApp(session_manager),
        session_authenticator(auth_enabled=auth_enabled, services=services),
    )
    routes: tuple[BaseRoute, ...] = (
        Route(external_path, external_gate, methods=_METHODS),
        Route(session_path, session_gate, methods=_METHODS),
    )
    return McpSurfaces(
        routes=routes,
        external=external,
        session=session,
        managers=(external_manager, session_manager),
    )
