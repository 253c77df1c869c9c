"""Low-level SDK servers for the two surfaces, and the ASGI plumbing that serves them.

Why the low-level ``Server`` and not ``MCPServer``: ``MCPServer(...)`` calls
``logging.basicConfig`` in its constructor (stack notes §1.1), which would install a root
handler behind the host's back, and it cannot take attrs classes in tool signatures. The
low-level ``Server`` configures no logging, takes our hand-written JSON Schemas, and lets the
shared wire module produce the JSON — so nothing here touches global logging at all.

Per-request data (who is calling, which session the endpoint is bound to) is attached to the
ASGI scope by :class:`AuthGate` before the SDK sees the request, and read back from the SDK's
per-request ``Request`` inside the tool; in both protocol eras that is the HTTP request that
carried the tool call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import anyio
import attrs
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from clarion.adapters.mcp.errors import INTERNAL_MESSAGE, error_result, tool_error
from clarion.app.usecases.auth import identity_bound
from clarion.domain.errors import ClarionError
from clarion.domain.model import Identity

SCOPE_KEY: Final = "clarion.mcp"
AUTH_REQUIRED: Final = "authentication required"
CLIENT_GONE: Final = "the client disconnected before the tool finished"
DISCONNECT_POLL_S: Final = 1.0
T = TypeVar("T")

_log = structlog.get_logger(__name__)


@attrs.frozen
class Caller:
    """Who is calling a surface and, on the in-session surface, the session it is bound to.

    ``agent`` is True when the caller authenticated with that session's agent token: it then
    sees only its own session's task in ``list_tasks``."""

    identity: Identity
    session_id: str = ""
    agent: bool = False


@attrs.frozen
class ToolCall:
    """One tool invocation as a handler sees it.

    ``context`` and ``params`` are the SDK's request context and the raw call parameters, for
    a handler that talks back to the calling client (elicitation); None outside the SDK."""

    arguments: Mapping[str, Any]
    caller: Caller
    report_progress: Callable[[float, str], Awaitable[None]]
    context: ServerRequestContext[Any, Any] | None = None
    params: CallToolRequestParams | None = None


ToolOutcome = CallToolResult | InputRequiredResult
ToolHandler = Callable[[ToolCall], Awaitable[ToolOutcome]]


@attrs.frozen
class RegisteredTool:
    """A tool's advertised description and the handler that serves it."""

    tool: Tool
    handler: ToolHandler


def json_result(data: Mapping[str, Any]) -> CallToolResult:
    """A success: structured content plus the same JSON as text (keys sorted, 2-space indent,
    like upstream's ``json.MarshalIndent`` of a map)."""
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller | None:
    request = ctx.request
    if not isinstance(request, Request):
        return None
    state = request.scope.get("state")
    caller = state.get(SCOPE_KEY) if isinstance(state, Mapping) else None
    return caller if isinstance(caller, Caller) else None


async def while_connected(
    request: Request, work: Callable[[], Awaitable[T]], poll: float
) -> T | None:
    """Run ``work`` until it finishes or the HTTP client that sent ``request`` disconnects
    (then ``work`` is cancelled and None returned).

    The 2026-07-28 transport cancels a handler whose client went away, but a legacy session
    keeps the request running after its response stream is gone (it is the session's, not the
    connection's); without an event store that stream can never be resumed, so nobody could
    ever receive the result. Watching the connection makes both eras end a call when its
    client leaves — for the ask tool that is what detaches the bundle (facts §4.9).
    """
    outcome: list[T] = []
    async with anyio.create_task_group() as tasks:

        async def watch() -> None:
            while not await request.is_disconnected():
                await anyio.sleep(poll)
            tasks.cancel_scope.cancel()

        tasks.start_soon(watch)
        outcome.append(await work())
        tasks.cancel_scope.cancel()
    return outcome[0] if outcome else None


def build_server(
    name: str,
    version: str,
    tools: Sequence[RegisteredTool],
    *,
    disconnect_poll: float = DISCONNECT_POLL_S,
) -> Server[Any]:
    """A low-level server that lists ``tools`` and dispatches calls to their handlers.

    A call that reaches a handler without a :class:`Caller` on its request (a transport that
    bypassed :class:`AuthGate`) is refused as unauthenticated rather than run as anyone. Over
    HTTP a call ends when its client disconnects (:func:`while_connected`).
    """
    by_name = {entry.tool.name: entry for entry in tools}
    listing = ListToolsResult(tools=[entry.tool for entry in tools])

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return listing

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> ToolOutcome:
        entry = by_name.get(params.name)
        if entry is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool: {params.name}")
        caller = _caller_of(ctx)
        if caller is None:
            return error_result("UNAUTHORIZED", AUTH_REQUIRED)
        step = 0

        async def report_progress(progress: float, message: str) -> None:
            nonlocal step
            step += 1
            # MCP progress must increase on every notification; a no-op without a token.
            await ctx.session.report_progress(max(progress, step), None, message)

        call = ToolCall(
            arguments=params.arguments or {},
            caller=caller,
            report_progress=report_progress,
            context=ctx,
            params=params,
        )

        async def run() -> ToolOutcome:
            try:
                return await entry.handler(call)
            except ClarionError as exc:
                return tool_error(exc, tool=params.name)
            except Exception as exc:  # noqa: BLE001 - top-level handler: one safe error (§9.3)
                return tool_error(exc, tool=params.name)

        request = ctx.request
        if not isinstance(request, Request):
            return await run()
        result = await while_connected(request, run, disconnect_poll)
        return result if result is not None else error_result("CANCELLED", CLIENT_GONE)

    def input_schema(tool_name: str) -> Mapping[str, Any] | None:
        entry = by_name.get(tool_name)
        return entry.tool.input_schema if entry is not None else None

    return Server(
        name,
        version=version,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )


Authenticator = Callable[[Scope], Awaitable[Caller | None]]


class AuthGate:
    """Pure ASGI wrapper: resolve the caller before the MCP transport sees the request.

    No caller → 401 ``{"error": "authentication required"}`` with ``WWW-Authenticate: Bearer``
    (interfaces.md); a failure while checking → 500 with a fixed text (never the cause).
    Otherwise the :class:`Caller` rides the scope's ``state`` into the tool, and its identity
    is bound as :func:`clarion.app.usecases.auth.current_identity`.
    """

    def __init__(self, app: ASGIApp, authenticate: Authenticator) -> None:
        self._app = app
        self._authenticate = authenticate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        try:
            caller = await self._authenticate(scope)
        except Exception:  # noqa: BLE001 - top-level handler: a store failure is a safe 500
            _log.error("mcp_authentication_failed", path=scope.get("path", ""), exc_info=True)
            await JSONResponse({"error": INTERNAL_MESSAGE}, status_code=500)(scope, receive, send)
            return
        if caller is None:
            response = JSONResponse(
                {"error": AUTH_REQUIRED}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})[SCOPE_KEY] = caller
        # Whatever an outer middleware concluded, inside the MCP surface the caller is this one.
        with identity_bound(caller.identity):
            await self._app(scope, receive, send)


def bearer_token(scope: Scope) -> str:
    """The ``Authorization: Bearer`` credential of a request, or ""."""
    for key, value in scope.get("headers", ()):
        if key == b"authorization":
            text: str = bytes(value).decode("latin-1")
            scheme, _, credential = text.partition(" ")
            if scheme.lower() == "bearer":
                return credential.strip()
    return ""
