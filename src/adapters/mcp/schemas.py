"""The four tools as data: names, descriptions and JSON Schemas.

Output schemas are generated from the wire models (:mod:`clarion.adapters.wire.models`);
input schemas, with their argument descriptions, are still written here.

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

from clarion.adapters.wire import models
from clarion.adapters.wire.jsonschema import mcp_dialect, object_schema

DEFAULT_SUFFIX: Final = "_kandev"
_MCP: Final = mcp_dialect(models.OPEN_IN_MCP)


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


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


# --- list_pending_questions (facts §6.3; L3, L4, L4a, L11) --------------------------------

LIST_PENDING_OUTPUT: Final = object_schema(models.PendingPage, _MCP)
LIST_PENDING_INPUT: Final = {
    "type": "object",
    "properties": {
        "workspace_id": _string(
            "Optional workspace ID filter. Omit to list across every workspace visible to the "
            "caller."
        ),
        "created_since": _string(
            "Optional RFC3339 timestamp; only bundles created at or after this time are returned."
        ),
        "cursor": _string("Optional opaque pagination cursor from a previous call's next_cursor."),
        "limit": {"type": "number", "description": "Optional page size (default 50, max 200)."},
    },
    "additionalProperties": False,
}

# --- answer_question (facts §6.4; N1, N3, N4, N9, R12) -------------------------------------

ANSWER_OUTPUT: Final = object_schema(models.Resolution, _MCP)


def _answer_input(names: ToolNames) -> dict[str, Any]:
    source = f"from {names.list_pending}"
    return {
        "type": "object",
        "properties": {
            "pending_id": _string(f"The bundle's pending_id, {source}."),
            "answers": {
                "type": "array",
                "description": "One entry per question in the bundle, in any order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "question_id": _string(f"The question's question_id, {source}."),
                        "selected_options": {
                            "type": "array",
                            "description": "Zero or more option IDs returned for this question.",
                            "items": {"type": "string"},
                        },
                        "custom_text": _string("Free-text answer for this question."),
                    },
                    "required": ["question_id"],
                },
            },
            "rejected": {
                "type": "boolean",
                "description": "Reject the whole bundle instead of answering it.",
            },
            "reject_reason": _string("Optional reason shown alongside a rejection."),
        },
        # N9: pending_id is required and nothing else.
        "required": ["pending_id"],
        "additionalProperties": False,
    }


# --- list_tasks (T1, T2; interfaces.md: optional workspace_id, {"tasks", "total"}) --------

LIST_TASKS_OUTPUT: Final = object_schema(models.ToolTaskList, _MCP)
LIST_TASKS_INPUT: Final = {
    "type": "object",
    "properties": {
        "workspace_id": _string(
            "Optional workspace ID filter. Omit to list tasks across every workspace visible to "
            "the caller."
        ),
    },
    "additionalProperties": False,
}

# --- ask_user_question (facts §2.2, §2.9 with §9.25 fixed) --------------------------------

ASK_OUTPUT: Final = {
    "type": "object",
    "properties": {
        "rejected": {"type": "boolean"},
        "reject_reason": {"type": "string"},
    },
    "required": ["rejected", "reject_reason"],
    # Every other key is a question id (the keys are the agent's own, so they are open).
    "additionalProperties": object_schema(models.AskedAnswer, _MCP),
}
ASK_INPUT: Final = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "description": (
                'Array of 1-4 question objects. Each question must have a "prompt" (the question '
                'text) and an "options" array (2-6 entries with label + description). Optional '
                'fields: "id" (stable identifier in the response map; auto-generated if omitted), '
                '"title" (≤12 chars short label).'
            ),
            "minItems": 1,
            "maxItems": 4,
            "items": {
                "type": "object",
                "properties": {
                    "id": _string(
                        "Stable identifier used as the key in the response map. Auto-assigned "
                        "(q1, q2, ...) if omitted."
                    ),
                    "title": _string("Optional short label (≤12 chars) shown above the prompt."),
                    "prompt": _string("The question text shown to the user."),
                    "options": {
                        "type": "array",
                        "description": "2-6 concrete, actionable choices.",
                        "minItems": 2,
                        "maxItems": 6,
                        "items": {
                            "type": "object",
                            "properties": {
                                "label": _string(
                                    "Short text (1-5 words) shown as the clickable option."
                                ),
                                "description": _string(
                                    "Brief explanation of what this option means."
                                ),
                            },
                            "required": ["label", "description"],
                        },
                    },
                },
                "required": ["prompt", "options"],
            },
        },
        "context": _string(
            "Optional single block of shared background information. Preserved verbatim; use "
            "context_paragraphs for multiple paragraphs."
        ),
        "context_paragraphs": {
            "type": "array",
            "description": (
                "Optional shared background as separate paragraphs. Preferred for multiline "
                "context; when non-empty, overrides context and is joined with blank lines."
            ),
            "items": {"type": "string"},
        },
    },
    "required": ["questions"],
    "additionalProperties": False,
}


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
        input_schema=LIST_PENDING_INPUT,
        output_schema=LIST_PENDING_OUTPUT,
        annotations=ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
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
        input_schema=_answer_input(names),
        output_schema=ANSWER_OUTPUT,
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
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
        input_schema=LIST_TASKS_INPUT,
        output_schema=LIST_TASKS_OUTPUT,
        annotations=ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
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
        input_schema=ASK_INPUT,
        output_schema=ASK_OUTPUT,
        annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False),
    )


def external_tools(names: ToolNames) -> tuple[Tool, ...]:
    """What ``/mcp`` registers (S1, S3): never the ask tool."""
    return (list_pending_tool(names), answer_tool(names), list_tasks_tool(names))


def session_tools(names: ToolNames) -> tuple[Tool, ...]:
    """What ``/mcp/session/{session_id}`` registers (S2): never the two external question tools."""
    return (ask_tool(names), list_tasks_tool(names))
