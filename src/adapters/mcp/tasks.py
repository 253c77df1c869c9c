"""MCP tasks (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663) on the agent surfaces.

A client that declares the extension in a ``tools/call``'s per-request capabilities
(``_meta["io.modelcontextprotocol/clientCapabilities"].extensions``) gets the ask tool's
answer as a task: the call returns a ``CreateTaskResult`` (``resultType: "task"``) once the
bundle and its record are durable, and the client polls:

- ``tasks/get`` — ``working`` while the bundle is open (``input_required`` with the form when
  the client declared form elicitation and elicitation is on), ``completed`` with exactly the
  ``CallToolResult`` the blocking call returns (the answers, or its ``WAIT_ENDED`` tool error
  when the bundle closed without an answer), ``cancelled`` after ``tasks/cancel``;
- ``tasks/update`` — the form's response, answered through the one resolver (surface
  ``agent_client``); the acknowledgement is empty, the outcome shows in ``tasks/get``;
- ``tasks/cancel`` — the agent no longer wants the answer: the bundle is cancelled (A9).

The task id is the ask's durable record (:mod:`clarion.app.usecases.agent_asks`): it survives
restarts, any replica sharing the database answers for it, and it is bound to the credential
that created it — another credential's task id gets the same ``-32602`` "task not found" as a
made-up one. The extension is a 2026-07-28 one: the SDK cannot carry a task result on the
legacy (2025-11-25) wire, whose clients keep the blocking call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Final

import pydantic
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    RequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from clarion.adapters.mcp.form import form_message, form_outcome, form_schema
from clarion.adapters.mcp.server import Caller, ToolCall, caller_of
from clarion.app.usecases.agent_asks import AgentAsks, Asker, AskStatus, Progress
from clarion.app.usecases.resolve import Resolver
from clarion.domain.asks import MAX_IDEMPOTENCY_KEY, AskRecord
from clarion.domain.errors import ClarionError, NotFound, ValidationError
from clarion.domain.resolved_by import Surface

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
CAPABILITIES_META_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
IDEMPOTENCY_META_KEY: Final = "dev.clarion/idempotency-key"
PENDING_META_KEY: Final = "dev.clarion/pending-id"
TASK_NOT_FOUND: Final = "Failed to retrieve task: Task not found"
POLL_INTERVAL_MS: Final = 2000
INPUT_KEY_PREFIX: Final = "clarion_answer:"
WORKING_MESSAGE: Final = "Waiting for a person to answer in Clarion"

_log = structlog.get_logger(__name__)


def _declared_extensions(call: ToolCall) -> Mapping[str, Any]:
    meta: Mapping[str, object] | None = call.params.meta if call.params is not None else None
    capabilities = meta.get(CAPABILITIES_META_KEY) if isinstance(meta, Mapping) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    return extensions if isinstance(extensions, Mapping) else {}


def wants_task(call: ToolCall) -> bool:
    """True when this call may be answered with a task: a 2026-07-28 request whose own
    capabilities declare the tasks extension (the spec's MUST NOT otherwise)."""
    if (
        call.context is None
        or call.context.session.protocol_version not in MODERN_PROTOCOL_VERSIONS
    ):
        return False
    return TASKS_EXTENSION in _declared_extensions(call)


def idempotency_key(call: ToolCall) -> str:
    """The ask's idempotency key from the call's ``_meta`` ("" when none was sent).

    Raises:
        ValidationError: the key is not a non-empty string of at most 200 characters.
    """
    meta: Mapping[str, object] | None = call.params.meta if call.params is not None else None
    if not isinstance(meta, Mapping) or IDEMPOTENCY_META_KEY not in meta:
        return ""
    key = meta[IDEMPOTENCY_META_KEY]
    if not isinstance(key, str) or not key.strip() or len(key) > MAX_IDEMPOTENCY_KEY:
        raise ValidationError(
            f"_meta[{IDEMPOTENCY_META_KEY!r}] must be a non-empty string of at most "
            f"{MAX_IDEMPOTENCY_KEY} characters",
            field=f"_meta.{IDEMPOTENCY_META_KEY}",
        )
    return key


def _stamp(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _task(
    record: AskRecord, status: str, *, ttl_ms: int | None, updated: datetime | None = None
) -> dict[str, Any]:
    return {
        "taskId": record.id,
        "status": status,
        "createdAt": _stamp(record.created_at),
        "lastUpdatedAt": _stamp(updated or record.created_at),
        "ttlMs": ttl_ms,
        "pollIntervalMs": POLL_INTERVAL_MS,
        # Which question the task waits on: the pending id every other surface shows.
        "_meta": {PENDING_META_KEY: record.pending_id},
    }


def created_result(record: AskRecord) -> dict[str, Any]:
    """The ``CreateTaskResult`` of an ask answered as a task (kept as long as its record:
    ``ttlMs`` null)."""
    return {
        "resultType": "task",
        **_task(record, "working", ttl_ms=None),
        "statusMessage": WORKING_MESSAGE,
    }


class TaskIdParams(RequestParams):
    """``tasks/get`` and ``tasks/cancel`` params."""

    task_id: str


class UpdateTaskParams(TaskIdParams):
    """``tasks/update`` params: responses keyed like the ``inputRequests`` they answer."""

    input_responses: dict[str, Any] = pydantic.Field(default_factory=dict)


def _asker(ctx: ServerRequestContext[Any, Any]) -> Asker:
    caller: Caller | None = caller_of(ctx)
    if caller is None:
        raise MCPError(INVALID_PARAMS, TASK_NOT_FOUND)
    return Asker.of(caller.identity, caller.credential, "")


def _offers_form(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


class TaskMethods:
    """``tasks/get``, ``tasks/update`` and ``tasks/cancel`` over :class:`AgentAsks`.

    ``tool_result(status)`` (awaited) renders a settled ask exactly as the blocking ask tool
    returns it, receipt included; ``ttl_ms`` is how long a task is kept (None: ``null``,
    for as long as the database keeps the ask's record).
    """

    def __init__(
        self,
        asks: AgentAsks,
        resolver: Resolver,
        *,
        tool_result: Callable[[AskStatus], Awaitable[CallToolResult]],
        ttl_ms: int | None,
        forms: bool,
    ) -> None:
        self._asks = asks
        self._resolver = resolver
        self._tool_result = tool_result
        self._ttl_ms = ttl_ms
        self._forms = forms

    def install(self, server: Server[Any]) -> None:
        """Serve the three methods on ``server`` and advertise the extension."""
        server.add_request_handler("tasks/get", TaskIdParams, self.get)
        server.add_request_handler("tasks/update", UpdateTaskParams, self.update)
        server.add_request_handler("tasks/cancel", TaskIdParams, self.cancel)
        server.extensions[TASKS_EXTENSION] = {}

    async def _status(
        self, ctx: ServerRequestContext[Any, Any], task_id: str, *, questions: bool = True
    ) -> tuple[Asker, AskStatus]:
        asker = _asker(ctx)
        try:
            return asker, await self._asks.status(asker, task_id, questions=questions)
        except NotFound:
            raise MCPError(INVALID_PARAMS, TASK_NOT_FOUND) from None

    async def get(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> dict[str, Any]:
        # The questions only go into a form; a poll that shows none is served by the ask
        # record's probe while nobody has answered (issue #35).
        shows_form = self._forms and _offers_form(ctx)
        _, status = await self._status(ctx, params.task_id, questions=shows_form)
        record = status.record
        if status.cancelled:
            return _task(record, "cancelled", ttl_ms=self._ttl_ms) | {
                "statusMessage": "The agent cancelled this question."
            }
        if status.progress is Progress.WAITING:
            task = _task(record, "working", ttl_ms=self._ttl_ms) | {
                "statusMessage": WORKING_MESSAGE
            }
            if shows_form and status.questions:
                form = ElicitRequest(
                    params=ElicitRequestFormParams(
                        message=form_message(status.questions, status.context),
                        requested_schema=form_schema(status.questions),
                    )
                )
                task |= {
                    "status": "input_required",
                    "inputRequests": {
                        INPUT_KEY_PREFIX + record.pending_id: form.model_dump(
                            by_alias=True, mode="json", exclude_none=True
                        )
                    },
                }
            return task
        result = await self._tool_result(status)
        updated = status.result.responded_at if status.result is not None else None
        return _task(record, "completed", ttl_ms=self._ttl_ms, updated=updated) | {
            "result": result.model_dump(by_alias=True, mode="json", exclude_none=True)
        }

    async def update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
    ) -> dict[str, Any]:
        asker, status = await self._status(ctx, params.task_id)
        record = status.record
        response = params.input_responses.get(INPUT_KEY_PREFIX + record.pending_id)
        if response is None or status.progress is not Progress.WAITING or status.cancelled:
            return {}  # not outstanding: ignored, as the extension says
        try:
            elicited = ElicitResult.model_validate(response)
        except pydantic.ValidationError:
            _log.info("mcp_task_update_unreadable", pending_id=record.pending_id)
            return {}
        if elicited.action != "accept":
            _log.info(
                "mcp_task_form_declined", pending_id=record.pending_id, action=elicited.action
            )
            return {}
        try:
            resolution = await self._resolver.resolve(
                asker.identity,
                record.pending_id,
                form_outcome(status.questions, elicited.content),
                surface=Surface.AGENT_CLIENT,
            )
        except ClarionError as exc:
            _log.info(
                "mcp_task_answer_refused",
                pending_id=record.pending_id,
                error_type=type(exc).__name__,
                field=getattr(exc, "field", ""),
            )
            return {}
        _log.info("mcp_task_answered", pending_id=record.pending_id, claimed=resolution.claimed)
        return {}

    async def cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
    ) -> dict[str, Any]:
        asker = _asker(ctx)
        try:
            await self._asks.cancel(asker, params.task_id)
        except NotFound:
            raise MCPError(INVALID_PARAMS, TASK_NOT_FOUND) from None
        return {}
