"""The approval tools' handlers (issue #33): arguments in, one :class:`Approvals` call, the
approval's view out (:mod:`clarion.adapters.mcp.approval_schemas` describes both).

``request_approval`` blocks like ``ask_user_question``: it sends progress every
``progress_interval`` seconds, runs in the session the endpoint's scope picks (the in-session
endpoint's own; on ``/mcp/agent`` the MCP session's, or one made for the call) and, when the
wait ends undecided, returns ``WAIT_ENDED`` naming the request's ``pending_id``: the same call
with that ``pending_id`` waits on it again — never asking twice — and returns the decision once
there is one. On ``/mcp/agent`` (a person's token) a client of the 2025-11-25 era that
declared elicitation is also offered the request in its own window
(:mod:`clarion.adapters.mcp.elicitation`: Approve/Deny and a comment), racing the wait like
the ask tool's offer; a 2026-07-28 client gets the plain wait (no ``input_required`` round
for approvals yet). A standing approval that matches decides
at once (``status: approved`` with ``standing_approval_id``). ``decide_approval`` is one
person's vote (quorum, veto, once per person), through the same resolver as every other
surface. Failures use the one error table (:func:`clarion.adapters.mcp.errors.tool_error`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs
from mcp.types import CallToolResult, TextContent

from clarion.adapters.mcp.arguments import AskArguments
from clarion.adapters.mcp.elicitation import Elicitation
from clarion.adapters.mcp.errors import WAIT_ENDED_MESSAGE, tool_error
from clarion.adapters.mcp.server import ToolCall, ToolHandler, json_result
from clarion.adapters.mcp.tools import WAITING_MESSAGE, SessionScope
from clarion.adapters.wire.approvals import approval_view_json, decision_result_json
from clarion.app.usecases.approvals import Approvals, ApprovalView
from clarion.domain.approvals import (
    APPROVAL_QUESTION_ID,
    APPROVE,
    DENY,
    ApprovalTerms,
    Candidates,
    Decision,
    parse_action,
    validate_terms,
)
from clarion.domain.errors import ClarionError, NotFound, ValidationError
from clarion.domain.questions import OptionDraft, QuestionDraft
from clarion.domain.resolved_by import Surface
from clarion.ports.waiters import WaitEnd, WaitEnded

REQUEST_FIELDS: Final = frozenset(
    {"action", "reason", "required_approvals", "candidates", "pending_id"}
)
DECIDE_FIELDS: Final = frozenset({"pending_id", "decision", "comment", "allow_for_minutes"})


@attrs.frozen
class RequestArguments:
    """``request_approval`` arguments, checked: the terms, candidate names, and the request
    to wait on again ("" for a new one)."""

    terms: ApprovalTerms
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    pending_id: str = ""


def _refuse_unknown(args: Mapping[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(set(args) - known)
    if unknown:
        raise ValidationError(f"invalid arguments: unknown field {unknown[0]!r}", field=unknown[0])


def _string(args: Mapping[str, Any], name: str, *, required: bool = False) -> str:
    value = args.get(name)
    if value is None or (required and value == ""):
        if required:
            raise ValidationError(f"{name} is required", field=name)
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"invalid arguments: {name} must be a string", field=name)
    return value


def _integer(args: Mapping[str, Any], name: str) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(f"invalid arguments: {name} must be an integer", field=name)
    return value


def _names(candidates: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = candidates.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        field = f"candidates.{key}"
        raise ValidationError(f"invalid arguments: {field} must be an array of names", field=field)
    return tuple(value)


def parse_request(arguments: Mapping[str, Any] | None) -> RequestArguments:
    """The request's arguments; the action is the domain's to check (size, depth, JSON)."""
    args = arguments or {}
    _refuse_unknown(args, REQUEST_FIELDS)
    action = args.get("action")
    if not isinstance(action, Mapping):
        raise ValidationError("action is required: {name, arguments}", field="action")
    _refuse_unknown({f"action.{key}": v for key, v in action.items()}, _ACTION_FIELDS)
    required = _integer(args, "required_approvals")
    terms = ApprovalTerms(
        action=parse_action(action.get("name"), action.get("arguments")),
        reason=_string(args, "reason"),
        required_approvals=1 if required is None else required,
    )
    validate_terms(terms, Candidates())  # the bounds, before any task is created
    candidates = args.get("candidates") or {}
    if not isinstance(candidates, Mapping):
        raise ValidationError("invalid arguments: candidates must be an object", field="candidates")
    _refuse_unknown({f"candidates.{k}": v for k, v in candidates.items()}, _CANDIDATE_FIELDS)
    return RequestArguments(
        terms=terms,
        users=_names(candidates, "users"),
        groups=_names(candidates, "groups"),
        pending_id=_string(args, "pending_id"),
    )


_ACTION_FIELDS: Final = frozenset({"action.name", "action.arguments"})
_CANDIDATE_FIELDS: Final = frozenset({"candidates.users", "candidates.groups"})


def approval_draft(terms: ApprovalTerms) -> AskArguments:
    """What the agent endpoint's session scope checks before it creates a task for the
    request: a one-question ask shaped like the approval's (the request itself is built
    from the terms by the use case)."""
    draft = QuestionDraft(
        prompt=f"Approve {terms.action.name}?",
        options=(
            OptionDraft("Approve", "Run the action", APPROVE),
            OptionDraft("Deny", "Do not run it", DENY),
        ),
        id=APPROVAL_QUESTION_ID,
    )
    return AskArguments(questions=(draft,), context="")


def _wait_ended(exc: WaitEnded, *, tool: str) -> CallToolResult:
    """``WAIT_ENDED`` for an approval request that is still open, saying how to wait again."""
    result = tool_error(exc, tool=tool)
    text = (
        f"{WAIT_ENDED_MESSAGE}. Nobody has decided approval request {exc.pending_id} yet. To "
        f"wait for the decision, call {tool} again with the same action and pending_id "
        f'"{exc.pending_id}": it returns the decision at once if there is one, and otherwise '
        "waits again without asking a second time."
    )
    result.content = [TextContent(type="text", text=text)]
    return result


@attrs.frozen
class RequestTool:
    """``request_approval``'s dependencies (see the module)."""

    approvals: Approvals
    tool: str
    progress_interval: float
    session_scope: SessionScope
    wait_timeout: float
    elicitation: Elicitation | None = None

    async def handle(self, call: ToolCall) -> CallToolResult:
        args = parse_request(call.arguments)
        try:
            view = await (self._rejoin(call, args) if args.pending_id else self._ask(call, args))
        except WaitEnded as exc:
            return _wait_ended(exc, tool=self.tool)
        except ClarionError as exc:
            return tool_error(exc, tool=self.tool, pending_id=args.pending_id)
        return json_result(approval_view_json(view))

    async def _ask(self, call: ToolCall, args: RequestArguments) -> ApprovalView:
        identity = call.caller.identity

        async def on_progress(count: int) -> None:
            await call.report_progress(float(count), WAITING_MESSAGE)

        candidates = await self.approvals.candidates_named(args.users, args.groups)
        # An agent's session token never decides an approval (it would approve its own
        # action), so the in-session endpoint's client is offered no form; on /mcp/agent the
        # caller is the person the token belongs to.
        offers = self.elicitation is not None and not call.caller.agent
        offer = self.elicitation.alongside(call, "") if offers and self.elicitation else None
        async with self.session_scope(call, approval_draft(args.terms)) as session_id:
            view = await self.approvals.request(
                identity,
                session_id=session_id,
                terms=args.terms,
                candidates=candidates,
                on_progress=on_progress,
                progress_interval=self.progress_interval,
                alongside=offer.alongside if offer is not None else None,
            )
        if offer is not None:
            await offer.complete()
        return view

    async def _rejoin(self, call: ToolCall, args: RequestArguments) -> ApprovalView:
        """Wait again on the request ``args.pending_id`` names; its action must be this one
        (else it is not found, as for any request the caller cannot see)."""
        identity = call.caller.identity
        view = await self.approvals.view(identity, args.pending_id)
        if view.record.action_digest != args.terms.action.digest:
            raise NotFound("clarification request not found")
        if view.status != "pending":
            return view
        view = await self.approvals.wait(identity, args.pending_id, self.wait_timeout)
        if view.status == "pending":
            raise WaitEnded(WaitEnd.TIMEOUT, args.pending_id)
        return view


def decide_handler(approvals: Approvals, *, tool: str) -> ToolHandler:
    """``decide_approval``: the caller's vote; the reply — REST's decision body — says whether
    it counted and, with ``allow_for_minutes``, the standing approval it granted."""

    async def handle(call: ToolCall) -> CallToolResult:
        args = call.arguments or {}
        _refuse_unknown(args, DECIDE_FIELDS)
        pending_id = _string(args, "pending_id", required=True)
        decision = _string(args, "decision", required=True)
        if decision not in (APPROVE, DENY):
            raise ValidationError('decision must be "approve" or "deny"', field="decision")
        try:
            reply = await approvals.decide(
                call.caller.identity,
                pending_id,
                Decision(decision),
                _string(args, "comment"),
                surface=Surface.MCP,
                allow_for_minutes=_integer(args, "allow_for_minutes"),
            )
        except ClarionError as exc:
            return tool_error(exc, tool=tool, pending_id=pending_id)
        return json_result(decision_result_json(reply))

    return handle
