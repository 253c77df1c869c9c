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
    models.LiveQuestion,
    models.LiveRequest,
    models.Created,
    models.Success,
    models.Workspace,
    models.WorkspaceList,
    models.Session,
    models.CreatedSession,
    models.Turn,
    models.Detached,
    models.Message,
    models.MessageList,
    models.ResumeList,
    models.Me,
    models.LoggedIn,
    models.Health,
    models.Error,
)

SCHEMAS: Final[dict[str, Schema]] = {
    **components(_GENERATED),
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
    "WorkspaceIn": _closed(
        {"name": _NON_BLANK, "owner_id": {"type": ["string", "null"]}}, required=["name"]
    ),
    "TaskIn": _closed({"title": _NON_BLANK, "workspace_id": STRING}, required=["title"]),
    "SessionIn": _closed({"is_primary": {"type": "boolean"}}, required=[]),
    "SessionPatch": _closed({"state": {"enum": list(SessionState.ALL)}}),
    "LoginIn": _closed({"token": STRING}),
}
