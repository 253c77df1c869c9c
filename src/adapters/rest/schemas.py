"""The component schemas of the OpenAPI document: exactly the JSON the routes send and accept.

The shapes that are wire models (:mod:`clarion.adapters.wire.models`) are generated from them;
the rest are still written here.

Closed objects throughout; R12's always-present keys on the respond envelope, L4a's on the
listing, T2's ``null`` pending actions, and the omitempty shapes upstream keeps for
``GET /:id`` (``context``) and ``GET /:id/wait`` (facts §5.10, unchanged per A4).
"""

from __future__ import annotations

from typing import Any, Final

from clarion.adapters.wire import models
from clarion.adapters.wire.jsonschema import components
from clarion.domain.model import SessionState

Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _closed(properties: Schema, required: list[str] | None = None) -> Schema:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


STRING: Final[Schema] = {"type": "string"}
# Not blank: the server trims and refuses an empty result (a 400 naming the field). No
# ``pattern`` says so, because JSON Schema's \s and Python's str.strip disagree at the edges.
_NON_BLANK: Final[Schema] = {"type": "string", "minLength": 1}
_TIMESTAMP: Final[Schema] = {"type": "string", "format": "date-time"}
_NULLABLE_TIMESTAMP: Final[Schema] = {"type": ["string", "null"], "format": "date-time"}

# The shapes the routes send that are wire models: generated from the classes.
_GENERATED: Final = (
    models.Option,
    models.WaitAnswer,
    models.WaitResponse,
    models.Answer,
    models.Response,
    models.RespondResult,
    models.ListedQuestion,
    models.ListedBundle,
    models.PendingPage,
    models.Task,
    models.TaskList,
)

SCHEMAS: Final[dict[str, Schema]] = {
    **components(_GENERATED),
    "Error": _closed({"error": STRING}),
    "LiveQuestion": _closed(
        {
            "id": STRING,
            "title": STRING,
            "prompt": STRING,
            "options": {"type": "array", "items": ref("Option")},
        }
    ),
    "LiveRequest": _closed(
        {
            "pending_id": STRING,
            "session_id": STRING,
            "task_id": STRING,
            "questions": {"type": "array", "items": ref("LiveQuestion")},
            "context": {"type": "string", "minLength": 1},
            "created_at": _TIMESTAMP,
        },
        required=["pending_id", "session_id", "task_id", "questions", "created_at"],
    ),
    "AnswerIn": _closed(
        {
            "question_id": STRING,
            "selected_options": {"type": ["array", "null"], "items": STRING},
            "custom_text": STRING,
        },
        required=[],
    ),
    "RespondRequest": _closed(
        {
            "answers": {"type": ["array", "null"], "items": ref("AnswerIn")},
            "rejected": {"type": "boolean"},
            "reject_reason": STRING,
        },
        required=[],
    ),
    "OptionIn": _closed(
        {
            "label": _NON_BLANK,
            "description": _NON_BLANK,
            "option_id": {"type": ["string", "null"]},
        },
        required=["label", "description"],
    ),
    "QuestionIn": _closed(
        {
            "prompt": _NON_BLANK,
            "options": {
                "type": "array",
                "items": ref("OptionIn"),
                "minItems": 2,
                "maxItems": 6,
            },
            "id": {"type": ["string", "null"]},
            "title": STRING,
        },
        required=["prompt", "options"],
    ),
    "CreateRequest": _closed(
        {
            "session_id": STRING,
            "questions": {
                "type": "array",
                "items": ref("QuestionIn"),
                "minItems": 1,
                "maxItems": 4,
            },
            "task_id": STRING,
            "context": STRING,
        },
        required=["session_id", "questions"],
    ),
    "Created": _closed({"pending_id": STRING}),
    "Success": _closed({"success": {"const": True}}),
    "Workspace": _closed(
        {"id": STRING, "name": STRING, "owner_id": STRING, "created_at": _TIMESTAMP}
    ),
    "WorkspaceList": _closed(
        {
            "workspaces": {"type": "array", "items": ref("Workspace")},
            "total": {"type": "integer", "minimum": 0},
        }
    ),
    "WorkspaceIn": _closed(
        {"name": _NON_BLANK, "owner_id": {"type": ["string", "null"]}}, required=["name"]
    ),
    "TaskIn": _closed({"title": _NON_BLANK, "workspace_id": STRING}, required=["title"]),
    "SessionIn": _closed({"is_primary": {"type": "boolean"}}, required=[]),
    "Session": _closed(
        {
            "id": STRING,
            "task_id": STRING,
            "state": {"enum": list(SessionState.ALL)},
            "is_primary": {"type": "boolean"},
            "created_at": _NULLABLE_TIMESTAMP,
            "updated_at": _NULLABLE_TIMESTAMP,
        }
    ),
    "CreatedSession": _closed(
        {
            "id": STRING,
            "task_id": STRING,
            "state": {"enum": list(SessionState.ALL)},
            "is_primary": {"type": "boolean"},
            "created_at": _NULLABLE_TIMESTAMP,
            "updated_at": _NULLABLE_TIMESTAMP,
            "current_turn_id": STRING,
            "agent_token": STRING,
        }
    ),
    "SessionPatch": _closed({"state": {"enum": list(SessionState.ALL)}}),
    "Turn": _closed(
        {
            "id": STRING,
            "session_id": STRING,
            "started_at": _TIMESTAMP,
            "created_at": _TIMESTAMP,
            "completed_at": _NULLABLE_TIMESTAMP,
        }
    ),
    "Detached": _closed({"detached": {"type": "integer", "minimum": 0}}),
    "Message": _closed(
        {
            "id": STRING,
            "session_id": STRING,
            "task_id": STRING,
            "turn_id": STRING,
            "type": STRING,
            "author_type": STRING,
            "content": STRING,
            "metadata": {"type": "object"},
            "created_at": _TIMESTAMP,
            "updated_at": _TIMESTAMP,
        }
    ),
    "MessageList": _closed({"messages": {"type": "array", "items": ref("Message")}}),
    "ResumeList": _closed({"resumes": {"type": "array", "items": ref("Message")}}),
    "LoginIn": _closed({"token": STRING}),
    "Me": _closed(
        {
            "user_id": STRING,
            "is_admin": {"type": "boolean"},
            "auth_enabled": {"type": "boolean"},
            "authenticated_by": {"enum": ["disabled", "token", "session", "none"]},
            "csrf_token": STRING,
        }
    ),
    "LoggedIn": _closed(
        {
            "user_id": STRING,
            "is_admin": {"type": "boolean"},
            "auth_enabled": {"type": "boolean"},
            "authenticated_by": {"const": "session"},
            "csrf_token": STRING,
            "expires_at": _TIMESTAMP,
        }
    ),
    "Health": _closed({"status": {"const": "ok"}, "database": {"const": "ok"}}),
}
