"""The tool handlers: arguments in, one use-case call, the shared JSON shapes out.

Each handler is built by a factory over the use case it calls, so the servers register
exactly these and the catalog documents exactly what the servers register.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final

import attrs
import structlog
from mcp.types import CallToolResult, TextContent

from clarion.adapters import wire
from clarion.adapters.mcp import arguments, tasks
from clarion.adapters.mcp.elicitation import Elicitation, LegacyOffer, Sealed
from clarion.adapters.mcp.errors import WAIT_ENDED_MESSAGE, tool_error
from clarion.adapters.mcp.server import ToolCall, ToolHandler, ToolOutcome, json_result
from clarion.adapters.wire import models
from clarion.app.usecases.agent_asks import AgentAsks, Answered, Asker, AskStatus, Progress
from clarion.app.usecases.ask import Asking, AskResult
from clarion.app.usecases.host import HostOperations
from clarion.app.usecases.listing import Listing
from clarion.app.usecases.resolve import Resolver
from clarion.domain.asks import AskRecord, retry_key
from clarion.domain.errors import ClarionError, ValidationError
from clarion.domain.resolved_by import Surface
from clarion.ports.system import Clock
from clarion.ports.waiters import WaitEnded

WAITING_MESSAGE: Final = "Waiting for your response in Clarion"
# The ask result's top-level keys; a question id equal to one would be ambiguous in the map.
EARLIER_KEY: Final = "earlier_answers"
# Issue #34: where an answered ask result carries its signed receipt (docs/receipts.md).
RECEIPT_META_KEY: Final = "clarion/receipt"
RESERVED_QUESTION_IDS: Final = frozenset({"rejected", "reject_reason", EARLIER_KEY})

_log = structlog.get_logger(__name__)


def list_pending_handler(listing: Listing, clock: Clock) -> ToolHandler:
    """``list_pending_questions`` (L1–L16): one page of the active bundles the caller sees."""

    async def handle(call: ToolCall) -> CallToolResult:
        args = arguments.parse_list_pending(call.arguments)
        page = await listing.list_pending(
            call.caller.identity,
            workspace_id=args.workspace_id,
            created_since=args.created_since,
            cursor=args.cursor,
            limit=args.limit,
        )
        return json_result(wire.list_json(page, clock.now()))

    return handle


def answer_handler(resolver: Resolver, *, tool: str) -> ToolHandler:
    """``answer_question`` (N1–N9): the shared resolver; a loser's replay is a success (N4)."""

    async def handle(call: ToolCall) -> CallToolResult:
        pending_id, outcome = arguments.parse_answer(call.arguments)
        try:
            resolution = await resolver.resolve(
                call.caller.identity, pending_id, outcome, surface=Surface.MCP
            )
        except ClarionError as exc:
            return tool_error(exc, tool=tool, pending_id=pending_id)
        return json_result(wire.resolution_json(resolution))

    return handle


def ask_result_json(result: AskResult) -> dict[str, Any]:
    """What the asking agent receives (facts §2.9), keyed by question id in question order.

    Every question has an entry with ``answered``, all ``selected_options`` (fixes §9.25:
    upstream kept only the first), ``selected_option`` (the first, for agents written against
    upstream; "" when none), ``custom_text`` and ``rejected``. ``rejected`` and
    ``reject_reason`` are always present at the top level.
    """
    data: dict[str, Any] = {}
    for question in result.questions:
        answer = result.answers.get(question.id)
        selected = list(answer.selected_options) if answer is not None else []
        custom_text = answer.custom_text if answer is not None else ""
        data[question.id] = wire.unstructure(
            models.AskedAnswer(
                answered=bool(selected or custom_text),
                selected_option=selected[0] if selected else "",
                selected_options=selected,
                custom_text=custom_text,
                rejected=result.rejected,
            )
        )
    data["rejected"] = result.rejected
    data["reject_reason"] = result.reject_reason
    return data


def _refuse_reserved_ids(args: arguments.AskArguments) -> None:
    for index, draft in enumerate(args.questions):
        if draft.id in RESERVED_QUESTION_IDS:
            raise ValidationError(
                f"question {index + 1} id {draft.id!r} is reserved; choose another id",
                field=f"questions[{index}].id",
            )


SessionScope = Callable[[ToolCall, arguments.AskArguments], AbstractAsyncContextManager[str]]
"""Which session an ask goes to: entered with the call and its parsed arguments, it yields the
session id and is left when the ask is over (however it ended)."""


@asynccontextmanager
async def bound_session(call: ToolCall, args: arguments.AskArguments) -> AsyncIterator[str]:
    """The in-session surface's scope: the session the endpoint is bound to."""
    yield call.caller.session_id


def wait_ended_result(exc: WaitEnded, *, tool: str) -> CallToolResult:
    """The ask tool's ``WAIT_ENDED`` error when its ask is recorded (issue #28), telling the
    agent how to get the answer later: the same call made again returns it at once if
    someone gave it meanwhile, waits for it while the question is open, and asks anew only
    if the question was closed without an answer."""
    result = tool_error(exc, tool=tool)
    text = (
        f"{WAIT_ENDED_MESSAGE}. Nobody has answered question {exc.pending_id} yet. To get the "
        f"answer, call {tool} again with exactly the same arguments: that call returns the "
        "answer at once if someone has given it meanwhile, and otherwise waits for it again "
        "without asking a second time (if the question was closed without an answer, it is "
        "asked anew)."
    )
    result.content = [TextContent(type="text", text=text)]
    return result


def _earlier_json(earlier: Sequence[AskStatus]) -> list[dict[str, Any]]:
    return [
        wire.unstructure(
            models.EarlierAnswer(
                pending_id=status.record.pending_id,
                status="answered" if status.result is not None else "closed",
                answers=ask_result_json(status.result) if status.result is not None else None,
            )
        )
        for status in earlier
    ]


def _earlier_text(entries: Sequence[Mapping[str, Any]]) -> str:
    lines = ["Answers to questions you asked earlier, whose calls ended before the answer came:"]
    lines += [json.dumps(entry, sort_keys=True, ensure_ascii=False) for entry in entries]
    return "\n".join(lines)


def ask_handler(
    asking: Asking,
    *,
    tool: str,
    progress_interval: float,
    session_scope: SessionScope = bound_session,
    elicitation: Elicitation | None = None,
    agent_asks: AgentAsks | None = None,
    ask_scope: Callable[[ToolCall], str] | None = None,
    result_meta: Callable[[ToolCall, str], dict[str, Any] | None] | None = None,
    receipt: Callable[[str], Awaitable[dict[str, Any] | None]] | None = None,
) -> ToolHandler:
    """``ask_user_question``: blocks until answered, sending progress every
    ``progress_interval`` seconds. A wait that ends without an answer — or a caller that goes
    away — leaves the bundle detached and answerable (facts §4.9; the use case does that).
    ``session_scope`` picks the session (by default the endpoint's own). With ``elicitation``
    a client that declared elicitation is also offered the bundle in its own window
    (:mod:`clarion.adapters.mcp.elicitation`, the same on both agent endpoints); arguments and
    results do not change.

    With ``agent_asks`` every ask is recorded under ``ask_scope(call)`` (issue #28): a retry
    of the same ask attaches to it, a client that declared the tasks extension gets a task
    (:mod:`clarion.adapters.mcp.tasks`), and a result carries the
    outcomes of the caller's earlier asks whose calls ended first (``earlier_answers``). A
    2026-07-28 ``input_required`` round is recorded too, so its retry — or a plain repeat of
    the call — attaches to the same question.

    ``result_meta(call, pending_id)``, when given and not None, becomes an answered call's
    result ``_meta`` (the MCP App card's hook, :mod:`clarion.adapters.mcp.app_card`).
    ``receipt(pending_id)``, when given, adds the answer's signed receipt to that ``_meta``
    under :data:`RECEIPT_META_KEY` (issue #34, docs/receipts.md); None adds nothing.
    """
    return AskTool(
        asking,
        tool=tool,
        progress_interval=progress_interval,
        session_scope=session_scope,
        elicitation=elicitation,
        agent_asks=agent_asks,
        ask_scope=ask_scope,
        result_meta=result_meta,
        receipt=receipt,
    ).handle


@attrs.frozen
class _Call:
    """One ask call as its steps share it: the call, its parsed arguments, its progress
    reporter and, on a 2026-07-28 round's retry, the sealed state it carries back."""

    call: ToolCall
    args: arguments.AskArguments
    on_progress: Callable[[int], Awaitable[None]]
    sealed: Sealed | None
    rounds: bool


@attrs.frozen
class AskTool:
    """The ask tool's dependencies and its paths (see :func:`ask_handler`): recorded or not,
    and per path the 2026-07-28 round's retry, a task or a first round, or the blocking wait
    with the 2025-11-25 elicitation offer racing it."""

    asking: Asking
    tool: str
    progress_interval: float
    session_scope: SessionScope = bound_session
    elicitation: Elicitation | None = None
    agent_asks: AgentAsks | None = None
    ask_scope: Callable[[ToolCall], str] | None = None
    result_meta: Callable[[ToolCall, str], dict[str, Any] | None] | None = None
    receipt: Callable[[str], Awaitable[dict[str, Any] | None]] | None = None

    async def handle(self, call: ToolCall) -> ToolOutcome:
        """One ask call: parsed, refused on a reserved question id, then served."""
        args = arguments.parse_ask(call.arguments)
        _refuse_reserved_ids(args)

        async def on_progress(count: int) -> None:
            await call.report_progress(float(count), WAITING_MESSAGE)

        elicitation = self.elicitation
        rounds = elicitation is not None and elicitation.rounds(call)
        retried = rounds and call.params is not None and call.params.request_state is not None
        sealed = elicitation.unseal(call, self._scope_of(call)) if retried and elicitation else None
        ask = _Call(call, args, on_progress, sealed, rounds)
        if self.agent_asks is None or self.ask_scope is None:
            return await self._unrecorded(ask)
        try:
            return await self._recorded(ask, self.agent_asks, self.ask_scope)
        except WaitEnded as exc:
            return wait_ended_result(exc, tool=self.tool)

    async def _meta_of(self, call: ToolCall, pending_id: str) -> dict[str, Any] | None:
        """The answered result's ``_meta``: the card's, plus the signed receipt under
        :data:`RECEIPT_META_KEY` (issue #34) — ``_meta``, so the pinned result is unchanged."""
        meta = self.result_meta(call, pending_id) if self.result_meta is not None else None
        receipt = await self.receipt(pending_id) if self.receipt is not None else None
        if receipt is None:
            return meta
        return {**(meta or {}), RECEIPT_META_KEY: receipt}

    async def _answered_result(self, call: ToolCall, result: AskResult) -> CallToolResult:
        meta = await self._meta_of(call, result.pending_id)
        return _with_meta(json_result(ask_result_json(result)), meta)

    async def _recorded_result(self, call: ToolCall, answered: Answered) -> CallToolResult:
        return _answered(answered, await self._meta_of(call, answered.result.pending_id))

    def _legacy_offer(self, call: ToolCall, context: str) -> LegacyOffer | None:
        """The 2025-11-25 elicitation offer that races the wait, when the client takes one."""
        return self.elicitation.alongside(call, context) if self.elicitation is not None else None

    def _scope_of(self, call: ToolCall) -> str:
        return self.ask_scope(call) if self.ask_scope is not None else session_scope_name(call)

    async def _recorded(
        self, ask: _Call, agent_asks: AgentAsks, ask_scope: Callable[[ToolCall], str]
    ) -> ToolOutcome:
        """An ask recorded under its scope (issue #28): attached to its earlier call's record
        when there is one."""
        call = ask.call
        asker = Asker.of(call.caller.identity, call.caller.credential, ask_scope(call))
        key = retry_key(tasks.idempotency_key(call), call.arguments)
        record = await agent_asks.find(asker, key)
        if ask.sealed is not None:  # the 2026-07-28 round's retry: wait, with the response
            return await self._recorded_retry(ask, ask.sealed, asker, record, agent_asks)
        if tasks.wants_task(call) or ask.rounds:
            if record is None:
                async with self.session_scope(call, ask.args) as session_id:
                    record = await agent_asks.offer(
                        asker,
                        key,
                        session_id,
                        ask.args.questions,
                        ask.args.context,
                        context_paragraphs=ask.args.context_paragraphs,
                        as_task=tasks.wants_task(call),
                    )
            if tasks.wants_task(call):
                _log.info("mcp_task_created", pending_id=record.pending_id)
                return tasks.created_result(record)
            return await self._first_round(call, asker, record, agent_asks)
        return await self._recorded_wait(ask, asker, key, record, agent_asks)

    async def _recorded_retry(
        self,
        ask: _Call,
        sealed: Sealed,
        asker: Asker,
        record: AskRecord | None,
        agent_asks: AgentAsks,
    ) -> ToolOutcome:
        """A 2026-07-28 round's retry of a recorded ask: the wait, raced by its response."""
        assert self.elicitation is not None
        answer = self.elicitation.answering(ask.call, sealed)
        if record is None or record.pending_id != sealed.pending_id:
            # Its record was handed over already (a replayed retry): the bundle's outcome,
            # or the wait on it, without the record.
            result = await self.asking.rejoin(
                ask.call.caller.identity,
                sealed.session_id,
                sealed.pending_id,
                on_progress=ask.on_progress,
                progress_interval=self.progress_interval,
                alongside=answer,
            )
            return await self._answered_result(ask.call, result)
        rejoined = await agent_asks.rejoin(
            asker,
            record,
            on_progress=ask.on_progress,
            progress_interval=self.progress_interval,
            alongside=answer,
        )
        return await self._recorded_result(ask.call, rejoined)

    async def _recorded_wait(
        self,
        ask: _Call,
        asker: Asker,
        key: str,
        record: AskRecord | None,
        agent_asks: AgentAsks,
    ) -> ToolOutcome:
        """The blocking recorded ask (a new one, or attached to its earlier call's record),
        raced by the 2025-11-25 elicitation offer."""
        offer = self._legacy_offer(ask.call, ask.args.context)
        alongside = offer.alongside if offer is not None else None
        if record is not None:
            answered = await agent_asks.attach(
                asker,
                record,
                on_progress=ask.on_progress,
                progress_interval=self.progress_interval,
                alongside=alongside,
            )
        else:
            async with self.session_scope(ask.call, ask.args) as session_id:
                answered = await agent_asks.ask(
                    asker,
                    key,
                    session_id,
                    ask.args.questions,
                    ask.args.context,
                    context_paragraphs=ask.args.context_paragraphs,
                    on_progress=ask.on_progress,
                    progress_interval=self.progress_interval,
                    alongside=alongside,
                )
        if offer is not None:
            await offer.complete()
        return await self._recorded_result(ask.call, answered)

    async def _first_round(
        self, call: ToolCall, asker: Asker, record: AskRecord, agent_asks: AgentAsks
    ) -> ToolOutcome:
        """The round's first call (or a plain repeat of it): the request while the question
        is open, else what the blocking call returns."""
        assert self.elicitation is not None
        status = await agent_asks.status(asker, record.id)
        if status.progress is Progress.WAITING:
            return self.elicitation.first_round(
                call,
                self._scope_of(call),
                record.pending_id,
                record.session_id,
                status.questions,
                status.context,
            )
        if status.result is not None:
            return await self._answered_result(call, status.result)
        assert status.ended is not None
        raise status.ended

    async def _unrecorded(self, ask: _Call) -> ToolOutcome:
        """Services that keep no records of agents' asks: the same offers, unrecorded."""
        call, args = ask.call, ask.args
        if ask.sealed is not None:
            assert self.elicitation is not None
            result = await self.asking.rejoin(
                call.caller.identity,
                ask.sealed.session_id,
                ask.sealed.pending_id,
                on_progress=ask.on_progress,
                progress_interval=self.progress_interval,
                alongside=self.elicitation.answering(call, ask.sealed),
            )
            return await self._answered_result(call, result)
        async with self.session_scope(call, args) as session_id:
            if ask.rounds:
                assert self.elicitation is not None
                pending_id, questions = await self.asking.offer(
                    call.caller.identity,
                    session_id,
                    args.questions,
                    args.context,
                    context_paragraphs=args.context_paragraphs,
                )
                return self.elicitation.first_round(
                    call, self._scope_of(call), pending_id, session_id, questions, args.context
                )
            offer = self._legacy_offer(call, args.context)
            result = await self.asking.ask(
                call.caller.identity,
                session_id,
                args.questions,
                args.context,
                context_paragraphs=args.context_paragraphs,
                on_progress=ask.on_progress,
                progress_interval=self.progress_interval,
                alongside=offer.alongside if offer is not None else None,
            )
        if offer is not None:
            await offer.complete()
        return await self._answered_result(call, result)


def session_scope_name(call: ToolCall) -> str:
    """The scope a 2026-07-28 round's state is bound to when asks are not recorded: the
    caller's session endpoint."""
    return f"session:{call.caller.session_id}"


def _answered(answered: Answered, meta: dict[str, Any] | None = None) -> CallToolResult:
    """A recorded ask's result, with the earlier outcomes it hands over (``earlier_answers``)
    and the result ``_meta`` when one is given."""
    data = ask_result_json(answered.result)
    if not answered.earlier:
        return _with_meta(json_result(data), meta)
    entries = _earlier_json(answered.earlier)
    outcome = json_result(data | {EARLIER_KEY: entries})
    outcome.content.append(TextContent(type="text", text=_earlier_text(entries)))
    return _with_meta(outcome, meta)


def _with_meta(outcome: CallToolResult, meta: dict[str, Any] | None) -> CallToolResult:
    if meta is not None:
        outcome.meta = meta
    return outcome


async def settled_result(
    status: AskStatus,
    *,
    tool: str,
    receipt: Callable[[str], Awaitable[dict[str, Any] | None]] | None = None,
) -> CallToolResult:
    """A recorded ask's outcome exactly as the blocking ask tool returns it (for
    ``tasks/get``): the answers — with their signed receipt under :data:`RECEIPT_META_KEY`
    when ``receipt`` gives one (issue #34) — or its ``WAIT_ENDED`` error when it closed
    unanswered."""
    if status.result is not None:
        found = await receipt(status.result.pending_id) if receipt is not None else None
        meta = {RECEIPT_META_KEY: found} if found is not None else None
        return _with_meta(json_result(ask_result_json(status.result)), meta)
    assert status.ended is not None
    return tool_error(status.ended, tool=tool)


def list_tasks_handler(host: HostOperations) -> ToolHandler:
    """``list_tasks`` (T1, T2): visible tasks with their pending-action projection. An agent
    (a caller authenticated by its session's agent token) sees its own session's task only."""

    async def handle(call: ToolCall) -> CallToolResult:
        workspace_id = arguments.parse_list_tasks(call.arguments)
        caller = call.caller
        if caller.agent:
            views = await host.list_session_tasks(caller.identity, caller.session_id, workspace_id)
        else:
            # The tool's input is pinned (interfaces.md: workspace_id only), so it takes no
            # cursor: it returns the first page at the largest size, CLARION_MAX_PAGE_SIZE.
            page = await host.list_tasks(caller.identity, workspace_id, limit=host.max_page_size)
            views = page.items
        return json_result(wire.tasks_json(views))

    return handle
