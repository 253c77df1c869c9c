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
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, cast

import attrs
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    PARSE_ERROR,
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.adapters import span_provider, wire
from clarion.adapters.disconnect import DISCONNECTED, disconnect_polled, until_disconnected
from clarion.adapters.mcp.errors import INTERNAL_MESSAGE, error_result, tool_error
from clarion.adapters.revocation import Check, RevocationWatch
from clarion.app.usecases.auth import bearer_credential, identity_bound
from clarion.domain.errors import failure_fields
from clarion.domain.model import Identity
from clarion.ports.telemetry import Metrics, NoMetrics, NoTracer, Tracer

SCOPE_KEY: Final = "clarion.mcp"
AUTH_REQUIRED: Final = "authentication required"
CLIENT_GONE: Final = "the client disconnected before the tool finished"
DISCONNECT_POLL_S: Final = 1.0

_log = structlog.get_logger(__name__)


@attrs.frozen
class Caller:
    """Who is calling a surface and, on the in-session surface, the session it is bound to.

    ``agent`` is True when the caller authenticated with that session's agent token: it then
    sees only its own session's task in ``list_tasks``. ``credential`` identifies the
    credential the call came with (a digest, never the secret; "" with authentication
    disabled): a legacy MCP session belongs to the credential that opened it.
    """

    identity: Identity
    session_id: str = ""
    agent: bool = False
    credential: str = ""
    # Re-checks the credential (False once revoked, expired or its user deactivated): a
    # request that runs on ends when it says so (issue #29 S8). None with auth disabled.
    still_valid: Check | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class ClientInfo:
    """What the client reported about itself (``clientInfo``: the legacy ``initialize``, or
    the 2026-07-28 request envelope); "" where it reported nothing. Client input: a label,
    never an identity."""

    name: str = ""
    version: str = ""


@attrs.frozen
class ToolCall:
    """One tool invocation as a handler sees it: its arguments, who calls, a way to report
    progress, what the client reported about itself and the HTTP request's headers ({} when
    the call did not come over HTTP).

    ``context`` and ``params`` are the SDK's request context and the raw call parameters, for
    a handler that talks back to the calling client (elicitation); None outside the SDK."""

    arguments: Mapping[str, Any]
    caller: Caller
    report_progress: Callable[[float, str], Awaitable[None]]
    client: ClientInfo = attrs.field(factory=ClientInfo)
    headers: Mapping[str, str] = attrs.field(factory=dict)
    context: ServerRequestContext[Any, Any] | None = None
    params: CallToolRequestParams | None = None


# A tool's result: the standard one, a 2026-07-28 input_required round, or a result shape an
# extension owns (the tasks extension's CreateTaskResult, as its wire JSON).
ToolOutcome = CallToolResult | InputRequiredResult | dict[str, Any]
ToolHandler = Callable[[ToolCall], Awaitable[ToolOutcome]]


@attrs.frozen
class RegisteredTool:
    """A tool's advertised description and the handler that serves it."""

    tool: Tool
    handler: ToolHandler


@attrs.frozen
class NegotiatedTools:
    """Tools only a client that negotiated an extension sees and may call (the MCP App card,
    issue #31). For a request where ``applies(ctx)`` holds, the listing is every tool passed
    through ``decorate`` followed by ``tools``, and ``tools`` may be called; for any other the
    listing is the plain one, unchanged, and ``tools`` are unknown tools."""

    applies: Callable[[ServerRequestContext[Any, Any]], bool]
    tools: Sequence[RegisteredTool]
    decorate: Callable[[Tool], Tool]


def json_result(data: Mapping[str, Any]) -> CallToolResult:
    """A success: structured content plus the same JSON as text (keys sorted, 2-space indent,
    like upstream's ``json.MarshalIndent`` of a map)."""
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller | None:
    request = ctx.request
    if not isinstance(request, Request):
        return None
    state = request.scope.get("state")
    caller = state.get(SCOPE_KEY) if isinstance(state, Mapping) else None
    return caller if isinstance(caller, Caller) else None


def _client_of(ctx: ServerRequestContext[Any, Any]) -> ClientInfo:
    params = ctx.session.client_params
    if params is None:
        return ClientInfo()
    return ClientInfo(name=params.client_info.name, version=params.client_info.version)


def build_server(
    name: str,
    version: str,
    tools: Sequence[RegisteredTool],
    *,
    disconnect_poll: float = DISCONNECT_POLL_S,
    metrics: Metrics | None = None,
    tracer: Tracer | None = None,
    negotiated: NegotiatedTools | None = None,
) -> Server[Any]:
    """A low-level server that lists ``tools`` and dispatches calls to their handlers, each
    call timed by ``metrics`` (issue #20) under its tool name. ``negotiated`` adds the tools
    (and listing) of a negotiated extension, for the clients that negotiated it only.

    A call that reaches a handler without a :class:`Caller` on its request (a transport that
    bypassed :class:`AuthGate`) is refused as unauthenticated rather than run as anyone. Over
    HTTP a call ends when its client disconnects (:mod:`clarion.adapters.disconnect`).
    """
    return _ToolDispatch.of(
        tools,
        negotiated,
        disconnect_poll=disconnect_poll,
        metrics=metrics if metrics is not None else NoMetrics(),
        tracer=tracer if tracer is not None else NoTracer(),
    ).server(name, version)


@attrs.frozen
class _ToolDispatch:
    """A server's tool methods: the listing (the extended one for a client that negotiated
    ``negotiated``), each call dispatched to its handler, and each tool's input schema."""

    by_name: Mapping[str, RegisteredTool]
    extra: Mapping[str, RegisteredTool]
    listing: ListToolsResult
    extended: ListToolsResult
    negotiated: NegotiatedTools | None
    disconnect_poll: float
    timings: Metrics
    spans: Tracer

    @classmethod
    def of(
        cls,
        tools: Sequence[RegisteredTool],
        negotiated: NegotiatedTools | None,
        *,
        disconnect_poll: float,
        metrics: Metrics,
        tracer: Tracer,
    ) -> _ToolDispatch:
        """The dispatch over ``tools``, plus those of ``negotiated`` for its clients."""
        extra = {entry.tool.name: entry for entry in negotiated.tools} if negotiated else {}
        extended = ListToolsResult(
            tools=[negotiated.decorate(entry.tool) for entry in tools]
            + [entry.tool for entry in extra.values()]
            if negotiated
            else []
        )
        return cls(
            by_name={entry.tool.name: entry for entry in tools},
            extra=extra,
            listing=ListToolsResult(tools=[entry.tool for entry in tools]),
            extended=extended,
            negotiated=negotiated,
            disconnect_poll=disconnect_poll,
            timings=metrics,
            spans=tracer,
        )

    def server(self, name: str, version: str) -> Server[Any]:
        """A low-level server answering with these methods (the SDK's spans only while
        OpenTelemetry records: :class:`SpansWhileTracing`)."""
        server: Server[Any] = Server(
            name,
            version=version,
            on_list_tools=self.list_tools,
            # The SDK types the handler's result as the core shapes; the runner passes an
            # extension's claimed shape (a mapping with its own resultType) through unchanged.
            on_call_tool=cast("Any", self.call_tool),
            get_tool_input_schema=self.input_schema,
        )
        server.middleware = [
            SpansWhileTracing(middleware)
            if isinstance(middleware, OpenTelemetryMiddleware)
            else middleware
            for middleware in server.middleware
        ]
        return server

    def _extension_applies(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        return self.negotiated is not None and self.negotiated.applies(ctx)

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        """``tools/list``: the extended listing for a client that negotiated the extension."""
        return self.extended if self._extension_applies(ctx) else self.listing

    def input_schema(self, tool_name: str) -> Mapping[str, Any] | None:
        """The input schema of any tool served, for the SDK's argument validation."""
        entry = self.by_name.get(tool_name) or self.extra.get(tool_name)
        return entry.tool.input_schema if entry is not None else None

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> ToolOutcome:
        """``tools/call``: the handler's outcome, ended when an HTTP client disconnects.

        Raises:
            MCPError: the tool is unknown (or only the negotiated extension's).
        """
        entry = self.by_name.get(params.name)
        if entry is None and self._extension_applies(ctx):
            entry = self.extra.get(params.name)
        if entry is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool: {params.name}")
        caller = caller_of(ctx)
        if caller is None:
            return error_result("UNAUTHORIZED", AUTH_REQUIRED)
        request = ctx.request
        call = ToolCall(
            arguments=params.arguments or {},
            caller=caller,
            report_progress=_progress_reporter(ctx),
            client=_client_of(ctx),
            headers=request.headers if isinstance(request, Request) else {},
            context=ctx,
            params=params,
        )
        handler = entry.handler

        async def run() -> ToolOutcome:
            return await self._run(handler, call, params.name)

        # The 2026-07-28 transport cancels a handler whose client went away: it awaits the
        # request's ``http.disconnect`` itself (we serve its event-stream responses, never
        # ``json_response``), so such a call needs no polling here: a parked agent's poll cost
        # about 0.1 ms of CPU a second, each (#35).
        if not isinstance(request, Request) or not is_legacy_request(request.headers):
            return await run()
        # A legacy session keeps the request running after its response stream is gone (it is
        # the session's, not the connection's); without an event store that stream can never
        # be resumed, so nobody could ever receive the result. Watching the connection makes
        # it end a call when its client leaves, as the 2026-07-28 era does — for the ask tool
        # that is what detaches the bundle (facts §4.9). The SDK's event-stream response reads
        # ``receive`` until the client leaves; the route's DisconnectSignal passes that on at
        # once, and the poll is only a backstop (#35).
        result = await until_disconnected(disconnect_polled(request, self.disconnect_poll), run)
        return error_result("CANCELLED", CLIENT_GONE) if result is DISCONNECTED else result

    async def _run(self, handler: ToolHandler, call: ToolCall, tool: str) -> ToolOutcome:
        """One call, timed and traced under its tool name; any failure is one safe error."""
        started = time.perf_counter()
        try:
            _check_storable(call.arguments)
            with self.spans.span(f"mcp.tool {tool}", tool=tool):
                return await handler(call)
        except Exception as exc:  # noqa: BLE001 - top-level handler: one safe error (§9.3)
            return tool_error(exc, tool=tool)
        finally:
            self.timings.tool_call(tool, time.perf_counter() - started)


class SpansWhileTracing:
    """The SDK's per-message OpenTelemetry middleware (a SERVER span around every MCP
    request, on by default; the SDK's documented opt-out is to drop it from
    ``Server.middleware``), run only while OpenTelemetry has a provider that records: with
    none installed — the host set no global provider, or the no-op one — its span would go
    nowhere, and building it (trace-context extraction, attributes, context attach) cost
    13–19 µs of every MCP request, each ``tasks/get`` poll included (#35; the check: about
    3 µs). Asked on every request, so a host that installs its provider after Clarion was
    built gets the SDK's spans from then on."""

    def __init__(self, spans: ServerMiddleware[Any]) -> None:
        self._spans = spans

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if not span_provider.records():
            return await call_next(ctx)
        return await self._spans(ctx, call_next)


def _progress_reporter(
    ctx: ServerRequestContext[Any, Any],
) -> Callable[[float, str], Awaitable[None]]:
    """A call's progress reporter: MCP progress must increase on every notification, so each
    reports at least its own step number; a no-op without a progress token."""
    step = 0

    async def report_progress(progress: float, message: str) -> None:
        nonlocal step
        step += 1
        await ctx.session.report_progress(max(progress, step), None, message)

    return report_progress


def _check_storable(arguments: Mapping[str, Any]) -> None:
    """Every tool's arguments, before the tool sees them: the same refusal as REST bodies.

    Raises:
        ValidationError: a string carries NUL or a lone surrogate, or nesting is too deep.
    """
    wire.require_storable(arguments, what="arguments", field="arguments")


Authenticator = Callable[[Scope], Awaitable[Caller | None]]


class AuthGate:
    """Pure ASGI wrapper: resolve the caller before the MCP transport sees the request.

    No caller → 401 ``{"error": "authentication required"}`` with ``WWW-Authenticate: Bearer``
    (interfaces.md); a failure while checking → 500 with a fixed text (never the cause).
    Otherwise the :class:`Caller` rides the scope's ``state`` into the tool, and its identity
    is bound as :func:`clarion.app.usecases.auth.current_identity`.
    """

    def __init__(
        self,
        app: ASGIApp,
        authenticate: Authenticator,
        revocation: RevocationWatch | None = None,
    ) -> None:
        self._app = app
        self._authenticate = authenticate
        self._revocation = revocation if revocation is not None else RevocationWatch()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        try:
            caller = await self._authenticate(scope)
        except Exception as exc:  # noqa: BLE001 - top-level handler: a store failure is a safe 500
            _log.error(
                "mcp_authentication_failed", path=scope.get("path", ""), **failure_fields(exc)
            )
            await JSONResponse({"error": INTERNAL_MESSAGE}, status_code=500)(scope, receive, send)
            return
        if caller is None:
            response = JSONResponse(
                {"error": AUTH_REQUIRED}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})[SCOPE_KEY] = caller
        # The SDK binds a legacy session to the principal of ``scope["user"]`` and answers a
        # request from any other principal exactly like one for an unknown session id.
        scope["user"] = AuthenticatedUser(
            AccessToken(
                token=caller.credential,
                client_id=caller.credential,
                scopes=[],
                subject=identity_key(caller.identity),
            )
        )
        # Whatever an outer middleware concluded, inside the MCP surface the caller is this one.
        with identity_bound(caller.identity):
            if caller.still_valid is None:
                await self._app(scope, receive, send)
            else:  # an ask, a legacy session's stream: ended when the credential stops working
                await self._revocation.serve(
                    caller.credential, caller.still_valid, self._app, scope, receive, send
                )


class DuplicateKeyGate:
    """Pure ASGI wrapper: a posted body whose JSON objects name a key twice is refused before
    the SDK, whose parser would silently keep the last value — HTTP 400 with a JSON-RPC parse
    error naming the key (REST refuses the same bodies with its own 400).

    The body is read here (up to ``max_body`` bytes, the SDK's own cap, which buffers it
    anyway) and handed on unchanged; a larger body passes unread to the SDK's 413, and a body
    that is not JSON to the SDK's own parse error.
    """

    def __init__(self, app: ASGIApp, *, max_body: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self._app = app
        self._max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        received: list[Message] = []
        size = 0
        complete = False
        while True:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self._max_body:
                break
            if not message.get("more_body", False):
                complete = True
                break
        if complete:
            body = b"".join(message.get("body", b"") for message in received)
            try:
                json.loads(body, object_pairs_hook=wire.refuse_duplicate_keys)
            except wire.DuplicateKey as exc:
                error = {"code": PARSE_ERROR, "message": f"Parse error: {exc}"}
                refusal = {"jsonrpc": "2.0", "id": None, "error": error}
                await JSONResponse(refusal, status_code=400)(scope, receive, send)
                return
            except (ValueError, RecursionError):
                pass  # not JSON at all: the SDK answers with its own parse error

        async def replay() -> Message:
            return received.pop(0) if received else await receive()

        await self._app(scope, replay, send)


def identity_key(identity: Identity) -> str:
    """What per-identity limits count by: the user id ("" for an internal caller)."""
    return identity.user_id or ""


def is_legacy_request(headers: Mapping[str, str]) -> bool:
    """Whether the SDK serves this request in the 2025-11-25 era (the session protocol): its
    ``MCP-Protocol-Version`` header is absent or a handshake version — the SDK's own routing
    rule; anything else goes to the sessionless 2026-07-28 entry."""
    version = headers.get("mcp-protocol-version")
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def bearer_token(scope: Scope) -> str:
    """The ``Authorization: Bearer`` credential of a request, or ""."""
    return bearer_credential(Headers(scope=scope).get("authorization")) or ""
