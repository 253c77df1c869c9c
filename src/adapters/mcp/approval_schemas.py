"""The two approval tools as data (issue #33): names come from :class:`ToolNames`, schemas here.

``request_approval`` (the agent surfaces) asks people for permission to run one exact action
and waits for the decision; ``decide_approval`` (the external and agent surfaces) is one
person's vote. Both return the approval's view — the JSON REST returns for
``GET /api/v1/approvals/{pending_id}`` — so an agent reads one shape everywhere. The existing
four tools and their pinned schemas are untouched: these are additive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from mcp.types import Tool, ToolAnnotations

if TYPE_CHECKING:
    from clarion.adapters.mcp.schemas import ToolNames
from clarion.domain.approvals import MAX_ACTION_NAME, MAX_REQUIRED_APPROVALS, MAX_STANDING_MINUTES
from clarion.domain.model import MAX_TEXT_CODE_POINTS

_STRING: Final = {"type": "string"}
_NAMES: Final = {"type": "array", "items": _STRING}
_DATE: Final = {"type": ["string", "null"], "format": "date-time"}

_ACTION: Final = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "description": 'The tool or operation, e.g. "shell" or "deploy".',
            "minLength": 1,
            "maxLength": MAX_ACTION_NAME,
        },
        "arguments": {
            "type": "object",
            "description": "Its exact arguments, a JSON object (at most 16 KiB as canonical "
            "JSON). People see them verbatim; the approval binds this very action by its "
            "SHA-256 digest.",
        },
    },
    "required": ["name", "arguments"],
}

REQUEST_INPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "action": {**_ACTION, "description": "The exact action you ask permission for."},
        "reason": {
            "type": "string",
            "description": "Why you want to run it, shown to the approvers.",
            "maxLength": MAX_TEXT_CODE_POINTS,
        },
        "required_approvals": {
            "type": "integer",
            "description": "How many distinct people must approve (default 1); any deny "
            "decides at once.",
            "minimum": 1,
            "maximum": MAX_REQUIRED_APPROVALS,
        },
        "candidates": {
            "type": "object",
            "description": "Who may decide, by user name and group name (default: anyone "
            "who may see your task).",
            "properties": {"users": _NAMES, "groups": _NAMES},
        },
        "pending_id": {
            "type": "string",
            "description": "Only to wait again on a request an earlier call made (its "
            "pending_id, with the same action): returns its decision, or waits for it.",
        },
    },
    "required": ["action"],
}

DECIDE_INPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "pending_id": {"type": "string", "description": "The approval request's pending_id."},
        "decision": {"type": "string", "enum": ["approve", "deny"]},
        "comment": {
            "type": "string",
            "description": "Told to the agent with the decision.",
            "maxLength": MAX_TEXT_CODE_POINTS,
        },
        "allow_for_minutes": {
            "type": "integer",
            "description": "With approve: also approve the same action (same name and "
            "arguments) in this workspace at once for this many minutes.",
            "minimum": 1,
            "maximum": MAX_STANDING_MINUTES,
        },
    },
    "required": ["pending_id", "decision"],
}

_VOTE: Final = {
    "type": "object",
    "properties": {
        "voter": _STRING,
        "display_name": _STRING,
        "decision": {"type": "string", "enum": ["approve", "deny"]},
        "comment": _STRING,
        "surface": _STRING,
        "at": _DATE,
    },
}

VIEW_OUTPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "pending_id": _STRING,
        "status": {"type": "string", "enum": ["pending", "approved", "denied", "closed"]},
        "action": _ACTION,
        "action_digest": _STRING,
        "reason": _STRING,
        "required_approvals": {"type": "integer"},
        "approvals": {"type": "integer", "description": "Distinct approving voters so far."},
        "candidates": {"type": "object", "properties": {"users": _NAMES, "groups": _NAMES}},
        "votes": {"type": "array", "items": _VOTE},
        "decision": {"type": ["string", "null"], "enum": ["approve", "deny", None]},
        "comment": _STRING,
        "decided_by": {"type": ["object", "null"]},
        "decided_at": _DATE,
        "standing_approval_id": {"type": ["string", "null"]},
        "closed_reason": _STRING,
        "task_id": _STRING,
        "session_id": _STRING,
        "created_at": _DATE,
    },
    "required": ["pending_id", "status", "action", "action_digest", "decision"],
}

DECIDE_OUTPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "approval": VIEW_OUTPUT,
        "vote": {"type": ["object", "null"]},
        "counted": {"type": "boolean"},
        "standing_approval": {"type": ["object", "null"]},
    },
    "required": ["approval", "counted"],
}


def request_approval_tool(names: ToolNames) -> Tool:
    """``request_approval`` (the agent surfaces): ask permission and wait for the decision."""
    return Tool(
        name=names.request_approval,
        title="Request approval",
        description=(
            "Ask people for permission to run one exact action (a tool or operation name and "
            "its arguments) and wait for their decision. They see the action verbatim and your "
            "reason; the approval binds this exact action. Returns the decision (status "
            '"approved" or "denied"), the comment and who decided; a deny is a normal outcome, '
            "not an error. A request that needs several approvals waits for all of them; any "
            "deny decides at once. If the call ends before a decision (WAIT_ENDED), call "
            "again with the same action and the pending_id to keep waiting."
        ),
        input_schema=REQUEST_INPUT,
        output_schema=VIEW_OUTPUT,
        annotations=ToolAnnotations(destructive_hint=False, open_world_hint=False),
    )


def decide_approval_tool(names: ToolNames) -> Tool:
    """``decide_approval`` (the external and agent surfaces): one person's vote."""
    return Tool(
        name=names.decide_approval,
        title="Decide an approval request",
        description=(
            "Approve or deny a pending approval request by its pending_id (approval requests "
            f"are listed by {names.list_pending} with their action). Your vote is recorded "
            "once (a repeat changes nothing); the request is decided when enough distinct "
            "people approved, or at once by any deny. Returns the request's view and whether "
            "your vote counted (false: a repeat, or it was already decided — the view says how)."
        ),
        input_schema=DECIDE_INPUT,
        output_schema=DECIDE_OUTPUT,
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
