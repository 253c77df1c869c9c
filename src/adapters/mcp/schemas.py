"""The four tools as data: names, descriptions and JSON Schemas.

Input and output schemas are generated from the wire models
(:mod:`clarion.adapters.wire.models`: the tools' arguments are :data:`~.models.TOOL_INPUTS`,
their argument descriptions field metadata there).

Descriptions and argument descriptions are upstream's (facts §2.2, §6.3, §6.4) with the tool
names carrying the configured suffix. The schemas are advertised, not enforced by the SDK (the
low-level server does not validate); :mod:`clarion.adapters.mcp.arguments` enforces them, naming
the offending field. Output schemas describe exactly what the tools return, so a client that
validates structured content against them (the SDK client does) accepts every result.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
from mcp.types import Tool, ToolAnnotations

from clarion.adapters.mcp.approval_schemas import decide_approval_tool, request_approval_tool
from clarion.adapters.wire import models
from clarion.adapters.wire.jsonschema import Dialect, mcp_dialect, object_schema

DEFAULT_SUFFIX: Final = "_kandev"
# The tools' behaviour hints, shared so that tools which behave alike say so alike (never
# mutated: a Tool only reads them). A read changes nothing; an answer writes once and a repeat
# returns the winner (first write wins), destroying nothing.
READ_ONLY: Final = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
ANSWERS: Final = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


@attrs.frozen
class ToolNames:
    """The registered tool names; ``suffix`` defaults to the spec's ``_kandev``."""

    suffix: str = DEFAULT_SUFFIX

    @property
    def list_pending(self) -> str:
        return f"list_pending_questions{self.suffix}"

    @property
    def answer(self) -> str:
        return f"answer_question{self.suffix}"

    @property
    def list_tasks(self) -> str:
        return f"list_tasks{self.suffix}"

    @property
    def ask(self) -> str:
        return f"ask_user_question{self.suffix}"

    @property
    def request_approval(self) -> str:
        """Issue #33: the agent surfaces' approval request (additive)."""
        return f"request_approval{self.suffix}"

    @property
    def decide_approval(self) -> str:
        """Issue #33: a person's (or agent's) vote on an approval (additive)."""
        return f"decide_approval{self.suffix}"


def _dialect(names: ToolNames) -> Dialect:
    """The MCP dialect, with the configured tool names for the descriptions that cite them."""
    return mcp_dialect(
        models.OPEN_IN_MCP,
        models.OTHER_PROPERTIES_IN_MCP,
        words={"list_pending": names.list_pending},
    )


def _schema(kind: type[Any], names: ToolNames | None = None) -> dict[str, Any]:
    return object_schema(kind, _dialect(names or ToolNames()))


# Outputs: list_pending_questions (facts §6.3; L3, L4, L4a, L11), answer_question (facts §6.4;
# N3, N4, R12), list_tasks (T1, T2; interfaces.md: {"tasks", "total"}), ask_user_question
# (facts §2.9 with §9.25 fixed). The inputs depend on the names (descriptions cite them).
LIST_PENDING_OUTPUT: Final = _schema(models.PendingPage)
ANSWER_OUTPUT: Final = _schema(models.Resolution)
LIST_TASKS_OUTPUT: Final = _schema(models.ToolTaskList)
ASK_OUTPUT: Final = _schema(models.AskOutput)


def list_pending_tool(names: ToolNames) -> Tool:
    """``list_pending_questions`` (external surface only, S1)."""
    return Tool(
        name=names.list_pending,
        title="List pending questions",
        description=(
            "List clarification bundles that are still waiting on an answer.\n\n"
            "A bundle is pending when no resolution has been recorded for it and at least one of "
            "its questions is still open. Each bundle groups every question the agent asked in "
            f"one {names.ask} call; answer with {names.answer} using the returned pending_id."
        ),
        input_schema=_schema(models.ListPendingInput, names),
        output_schema=LIST_PENDING_OUTPUT,
        annotations=READ_ONLY,
    )


def answer_tool(names: ToolNames) -> Tool:
    """``answer_question`` (external surface only, S1)."""
    return Tool(
        name=names.answer,
        title="Answer a pending question",
        description=(
            "Answer or reject a pending clarification bundle by its pending_id (from "
            f"{names.list_pending}).\n\n"
            'Provide either "answers" (one entry per question in the bundle) or "rejected": true '
            'with an optional "reject_reason" — not both. Resolution is idempotent and '
            "first-write-wins: if the bundle was already resolved by someone else, this returns "
            "claimed: false along with the winning resolution's status and response, not an error."
        ),
        input_schema=_schema(models.AnswerInput, names),
        output_schema=ANSWER_OUTPUT,
        annotations=ANSWERS,
    )


def list_tasks_tool(names: ToolNames) -> Tool:
    """``list_tasks`` (both surfaces), enriched with the pending-action projection (T1, T2)."""
    return Tool(
        name=names.list_tasks,
        title="List tasks",
        description=(
            "List the tasks visible to the caller, optionally limited to one workspace, oldest "
            "first.\n\n"
            'Each task carries "task_pending_action" and "primary_session_pending_action": '
            '"clarification" when an agent on that task (or on its primary session) is blocked '
            "on a question, and null when nothing is pending.\n\n"
            "At most the server's page-size limit of tasks is returned (200 unless the operator "
            "set CLARION_MAX_PAGE_SIZE): the oldest ones. Pass workspace_id to narrow the list "
            "when it is full."
        ),
        input_schema=_schema(models.ListTasksInput, names),
        output_schema=LIST_TASKS_OUTPUT,
        annotations=READ_ONLY,
    )


def ask_tool(names: ToolNames) -> Tool:
    """``ask_user_question`` (in-session surface only, S3)."""
    return Tool(
        name=names.ask,
        title="Ask the user",
        description=(
            "Ask the user 1-4 related questions and wait for all answers. Each question requires "
            "a prompt and 2-6 concrete options with short labels and descriptions; use a stable "
            "id when response keys matter. Call only when required input cannot be inferred, and "
            "bundle related questions in one call. Returns answers keyed by question id; a "
            "rejected bundle includes rejected=true and may include reject_reason."
        ),
        input_schema=_schema(models.AskInput, names),
        output_schema=ASK_OUTPUT,
        annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False),
    )


def external_tools(names: ToolNames) -> tuple[Tool, ...]:
    """What ``/mcp`` registers (S1, S3): never the ask tool; deciding approvals (issue #33)."""
    return (
        list_pending_tool(names),
        answer_tool(names),
        list_tasks_tool(names),
        decide_approval_tool(names),
    )


def session_tools(names: ToolNames) -> tuple[Tool, ...]:
    """What ``/mcp/session/{session_id}`` registers (S2): never the two external question tools;
    requesting approvals (issue #33)."""
    return (ask_tool(names), list_tasks_tool(names), request_approval_tool(names))


def agent_tools(names: ToolNames) -> tuple[Tool, ...]:
    """What ``/mcp/agent`` registers: the in-session surface's tools and, as an agent may
    also be asked to decide another's request (issue #33), ``decide_approval``."""
    return (*session_tools(names), decide_approval_tool(names))
