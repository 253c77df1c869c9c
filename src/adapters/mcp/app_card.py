"""The MCP App card (issue #31): the ask shown as a card in the asking agent's own host.

This is the MCP Apps extension (``io.modelcontextprotocol/ui``, SEP-1865, stable 2026-01-26)
on the two agent surfaces (``/mcp/session/{session_id}`` and ``/mcp/agent``):

- ``resources/read`` serves :data:`RESOURCE_URI`, one self-contained HTML document
  (``text/html;profile=mcp-app``: inline CSS and script, nothing fetched from anywhere; the
  inbox's stylesheet is inlined into it). Its ``_meta.ui`` declares no external domains at all
  (``csp`` with empty lists) and ``prefersBorder: false`` (the card draws its own).
- To a client that negotiated the extension — it declared ``io.modelcontextprotocol/ui`` with
  ``mimeTypes`` containing ``text/html;profile=mcp-app`` in its capabilities' ``extensions``
  (the legacy ``initialize``, or a 2026-07-28 request's own envelope) — the ask tool is listed
  with ``_meta.ui.resourceUri`` (so the host renders the card beside the call), two app-only
  tools are listed (``_meta.ui.visibility: ["app"]``: a host keeps them from the model) and
  callable, the resource is listed, and an ask's successful result carries the bundle's id in
  ``_meta["clarion/pending_id"]`` (``_meta`` never reaches the model).
- Any other client sees exactly what it saw before: the pinned tool listing, byte for byte, no
  resources, no ``_meta`` on results; the app-only tools are unknown tools to it.

The card talks to its host over ``postMessage`` JSON-RPC (``ui/initialize``, then the host's
``ui/notifications/tool-input`` / ``tool-result``); through the host it calls
:data:`STATUS_TOOL` (find the ask's bundle from the tool input, or read one by id) and
:data:`ANSWER_TOOL` (answer or skip it). The answer goes through the one resolver
(:class:`~clarion.app.usecases.resolve.Resolver`) with the surface ``mcp_app``: exactly once
across every surface, a loser gets the winner's replay, and a bundle the caller may not see is
"clarification request not found" whether it is foreign or made up.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import structlog
from mcp.server import Server, ServerRequestContext
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, ResourceCsp, client_supports_apps
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    ListResourcesResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    TextResourceContents,
    Tool,
)

from clarion.adapters import wire
from clarion.adapters.mcp import arguments
from clarion.adapters.mcp.errors import tool_error
from clarion.adapters.mcp.schemas import ANSWERS, READ_ONLY, ToolNames, answer_tool
from clarion.adapters.mcp.server import (
    NegotiatedTools,
    RegisteredTool,
    ToolCall,
    ToolHandler,
    json_result,
)
from clarion.adapters.wire.history import resolver_model
from clarion.app.usecases.agent_asks import AgentAsks, Asker, BundleView, Progress
from clarion.app.usecases.resolve import Resolver
from clarion.domain.asks import retry_key
from clarion.domain.errors import ClarionError, ValidationError
from clarion.domain.model import Resolution
from clarion.domain.resolved_by import ResolvedBy, Surface

RESOURCE_URI: Final = "ui://clarion/question-card.html"
RESOURCE_NAME: Final = "clarion_question_card"
ANSWER_TOOL: Final = "clarion_app_answer"
STATUS_TOOL: Final = "clarion_app_status"
PENDING_META_KEY: Final = "clarion/pending_id"
CARD_VERSION: Final = "1"
# ext-apps: a tool visible to the app only (a host MUST NOT list it to the model).
APP_ONLY: Final = ("app",)
# No external origin of any kind: the card fetches nothing (the spec's restrictive default).
_CSP: Final = ResourceCsp(connect_domains=[], resource_domains=[], frame_domains=[])
_STYLE_SLOT: Final = "/* clarion:inbox.css */"
_CARD_FILE: Final = "question-card.html"

_log = structlog.get_logger(__name__)


def negotiated(ctx: ServerRequestContext[Any, Any] | None) -> bool:
    """Whether the client of this request negotiated MCP Apps (the SDK's own check: the
    extension declared with the ``text/html;profile=mcp-app`` MIME type)."""
    return ctx is not None and client_supports_apps(ctx)


# -- the HTML document ---------------------------------------------------------------------------


def _themed(stylesheet: str) -> str:
    """The inbox's stylesheet plus its two palettes under ``:root[data-theme=…]``, so the host's
    ``theme`` (light or dark) wins over the system's preference inside the card.

    Raises:
        ValueError: the stylesheet no longer has the light ``:root`` block or the dark media
            block this relies on (a change to inbox.css must keep the card working).
    """
    light = re.search(r"^:root \{\n(.*?)^\}", stylesheet, re.S | re.M)
    dark = re.search(
        r"@media \(prefers-color-scheme: dark\) \{\s*:root \{\n(.*?)\n\s*\}\s*\}", stylesheet, re.S
    )
    if light is None or dark is None:
        raise ValueError("inbox.css: the light :root block or the dark palette is missing")
    palette = "\n".join(
        line for line in light.group(1).splitlines() if line.strip().startswith("--")
    )
    return (
        f"{stylesheet}\n"
        f':root[data-theme="light"] {{\n  color-scheme: light;\n{palette}\n}}\n'
        f':root[data-theme="dark"] {{\n  color-scheme: dark;\n{dark.group(1)}\n}}\n'
    )


@functools.cache
def card_html() -> str:
    """The card: ``static/question-card.html`` with the inbox's stylesheet inlined."""
    package = importlib.resources.files("clarion")
    template = (package / "adapters" / "mcp" / "static" / _CARD_FILE).read_text("utf-8")
    stylesheet = (package / "adapters" / "web" / "static" / "inbox.css").read_text("utf-8")
    if template.count(_STYLE_SLOT) != 1:
        raise ValueError(f"{_CARD_FILE} must contain {_STYLE_SLOT} exactly once")
    return template.replace(_STYLE_SLOT, _themed(stylesheet))


def _resource_meta() -> dict[str, Any]:
    csp = _CSP.model_dump(by_alias=True, exclude_none=True)
    return {"ui": {"csp": csp, "prefersBorder": False}}


def card_resource() -> Resource:
    """The card as ``resources/list`` shows it."""
    return Resource(
        uri=RESOURCE_URI,
        name=RESOURCE_NAME,
        title="Clarion question card",
        description="The questions an agent asked, answerable in place (MCP Apps).",
        mime_type=APP_MIME_TYPE,
        _meta=_resource_meta(),
    )


def read_card() -> ReadResourceResult:
    """What ``resources/read`` of :data:`RESOURCE_URI` returns."""
    return ReadResourceResult(
        contents=[
            TextResourceContents(
                uri=RESOURCE_URI, mime_type=APP_MIME_TYPE, text=card_html(), _meta=_resource_meta()
            )
        ]
    )


# -- the card's state, as the app-only tools return it -------------------------------------------

_STATUS: Final = {
    Progress.WAITING: "pending",
    Progress.ENDED: "closed",
}


def _questions_json(view: BundleView) -> list[dict[str, Any]]:
    return [
        {
            "question_id": question.id,
            "title": question.title,
            "prompt": question.prompt,
            "options": wire.unstructure(wire.option_models(question.options)),
        }
        for question in view.questions
    ]


def card_json(view: BundleView, resolution: Resolution | None = None) -> dict[str, Any]:
    """The card's state: the bundle, ``status`` (``pending``, ``answered``, ``rejected`` or
    ``closed``), and once settled the winner's ``response`` and ``resolved_by``."""
    settled = resolution or view.resolution
    resolved_by: ResolvedBy | None = view.resolved_by if view.resolution is not None else None
    return {
        "pending_id": view.pending_id,
        "status": settled.status if settled is not None else _STATUS[view.progress],
        "context": view.context,
        "questions": _questions_json(view),
        "response": wire.response_json(settled) if settled is not None else None,
        "resolved_by": (
            wire.unstructure(resolver_model(resolved_by)) if resolved_by is not None else None
        ),
    }


_NULLABLE_OBJECT: Final = {"type": ["object", "null"]}
CARD_OUTPUT: Final = {
    "type": "object",
    "required": ["pending_id", "status", "context", "questions", "response", "resolved_by"],
    "properties": {
        "pending_id": {"type": "string"},
        "status": {"type": "string", "enum": ["pending", "answered", "rejected", "closed"]},
        "context": {"type": "string"},
        "questions": {"type": "array", "items": {"type": "object"}},
        "response": _NULLABLE_OBJECT,
        "resolved_by": _NULLABLE_OBJECT,
        "claimed": {"type": "boolean"},
    },
}


# -- the tools -----------------------------------------------------------------------------------


def _app_meta() -> dict[str, Any]:
    return {"ui": {"resourceUri": RESOURCE_URI, "visibility": list(APP_ONLY)}}


def status_tool() -> Tool:
    """``clarion_app_status`` (app-only): the card's state, found from the ask's arguments."""
    return Tool(
        name=STATUS_TOOL,
        title="Question card: status",
        description=(
            "For the Clarion question card only. The state of the bundle the card shows: pass "
            '"ask" (the ask tool\'s arguments, as the host delivered them) to find your open '
            'ask\'s bundle, or "pending_id" to read a bundle by id.'
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "pending_id": {"type": "string", "minLength": 1},
                "ask": {"type": "object"},
            },
        },
        output_schema=CARD_OUTPUT,
        annotations=READ_ONLY,
        _meta=_app_meta(),
    )


def answer_app_tool(names: ToolNames) -> Tool:
    """``clarion_app_answer`` (app-only): the external answer tool's arguments, the card's
    state (plus ``claimed``) back."""
    return Tool(
        name=ANSWER_TOOL,
        title="Question card: answer",
        description=(
            "For the Clarion question card only. Answer or skip the bundle the card shows: "
            f"the same arguments as {names.answer}. First answer wins; a later one returns "
            "claimed: false with the winner's answer."
        ),
        input_schema=answer_tool(names).input_schema,
        output_schema=CARD_OUTPUT,
        annotations=ANSWERS,
        _meta=_app_meta(),
    )


def _status_arguments(args: Mapping[str, Any]) -> tuple[str, Mapping[str, Any] | None]:
    """``pending_id`` or ``ask``, exactly one.

    Raises:
        ValidationError: an unknown field, both or neither, or a wrong type (naming it).
    """
    unknown = sorted(set(args) - {"pending_id", "ask"})
    if unknown:
        raise ValidationError(f"invalid arguments: unknown field {unknown[0]!r}", field=unknown[0])
    pending_id, ask = args.get("pending_id"), args.get("ask")
    if (pending_id is None) == (ask is None):
        raise ValidationError("give exactly one of pending_id and ask", field="pending_id")
    if pending_id is not None:
        if not isinstance(pending_id, str) or not pending_id:
            raise ValidationError(
                "invalid arguments: pending_id must be a non-empty string", field="pending_id"
            )
        return pending_id, None
    if not isinstance(ask, Mapping):
        raise ValidationError("invalid arguments: ask must be an object", field="ask")
    return "", ask


class AppCard:
    """The card on one agent surface: its app-only tools, its resource, and what a client that
    negotiated MCP Apps sees differently (see the module docstring)."""

    def __init__(
        self,
        resolver: Resolver,
        agent_asks: AgentAsks,
        *,
        names: ToolNames,
        ask_scope: Callable[[ToolCall], str],
    ) -> None:
        self._resolver = resolver
        self._asks = agent_asks
        self._names = names
        self._ask_scope = ask_scope

    def _asker(self, call: ToolCall) -> Asker:
        return Asker.of(call.caller.identity, call.caller.credential, self._ask_scope(call))

    def status_handler(self) -> ToolHandler:
        async def handle(call: ToolCall) -> CallToolResult:
            pending_id, ask = _status_arguments(call.arguments)
            key = retry_key("", ask) if ask is not None else ""
            try:
                view = await self._asks.view(self._asker(call), key=key, pending_id=pending_id)
            except ClarionError as exc:
                return tool_error(exc, tool=STATUS_TOOL, pending_id=pending_id)
            return json_result(card_json(view))

        return handle

    def answer_handler(self) -> ToolHandler:
        async def handle(call: ToolCall) -> CallToolResult:
            pending_id, outcome = arguments.parse_answer(call.arguments)
            identity = call.caller.identity
            try:
                resolution = await self._resolver.resolve(
                    identity, pending_id, outcome, surface=Surface.MCP_APP
                )
                view = await self._asks.view(self._asker(call), pending_id=pending_id)
            except ClarionError as exc:
                return tool_error(exc, tool=ANSWER_TOOL, pending_id=pending_id)
            _log.info("mcp_app_answered", pending_id=pending_id, claimed=resolution.claimed)
            return json_result(card_json(view, resolution) | {"claimed": resolution.claimed})

        return handle

    def negotiated_tools(self) -> NegotiatedTools:
        """The hook :func:`~clarion.adapters.mcp.server.build_server` takes."""
        return NegotiatedTools(
            applies=negotiated,
            tools=(
                RegisteredTool(tool=status_tool(), handler=self.status_handler()),
                RegisteredTool(tool=answer_app_tool(self._names), handler=self.answer_handler()),
            ),
            decorate=self.decorate,
        )

    def decorate(self, tool: Tool) -> Tool:
        """The ask tool as a client with MCP Apps sees it (``_meta.ui.resourceUri``); any other
        tool unchanged."""
        if tool.name != self._names.ask:
            return tool
        meta = dict(tool.meta or {}) | {"ui": {"resourceUri": RESOURCE_URI}}
        return tool.model_copy(update={"meta": meta})

    def result_meta(self, call: ToolCall, pending_id: str) -> dict[str, Any] | None:
        """What an ask's successful result carries in ``_meta`` for a client with MCP Apps: the
        bundle's id, so a card opened later can read who answered (None for other clients)."""
        return {PENDING_META_KEY: pending_id} if negotiated(call.context) else None

    def install(self, server: Server[Any]) -> None:
        """Serve ``resources/list`` and ``resources/read`` and advertise the extension."""

        async def list_resources(
            ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
        ) -> ListResourcesResult:
            return ListResourcesResult(resources=[card_resource()] if negotiated(ctx) else [])

        async def read_resource(
            ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams
        ) -> ReadResourceResult:
            if str(params.uri) != RESOURCE_URI:
                raise MCPError(INVALID_PARAMS, f"unknown resource: {params.uri}")
            return read_card()

        server.add_request_handler("resources/list", PaginatedRequestParams, list_resources)
        server.add_request_handler("resources/read", ReadResourceRequestParams, read_resource)
        server.extensions[EXTENSION_ID] = {}


__all__ = [
    "ANSWER_TOOL",
    "PENDING_META_KEY",
    "RESOURCE_URI",
    "STATUS_TOOL",
    "AppCard",
    "card_html",
    "card_json",
    "negotiated",
    "read_card",
]
