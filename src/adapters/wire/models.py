"""One attrs class per JSON shape Clarion sends: the wire format's single definition.

The converter in :mod:`clarion.adapters.wire.convert` turns these into JSON and back, and
:mod:`clarion.adapters.wire.jsonschema` derives their JSON Schemas (OpenAPI components, MCP
output schemas). A field's ``metadata["schema"]`` adds keywords to the schema its type gives
(``minimum``, ``minLength``, …) or, under ``"replace"``, states the whole schema where the
type alone cannot say it; keyed ``"*"`` for every dialect or by a dialect's name (``"mcp"``)
where the published schemas differ (:func:`dialects`). A class's schema name is its class name.
The MCP tools' arguments are models too (:data:`TOOL_INPUTS`); their argument descriptions
(upstream's words, facts §2.2, §6.3, §6.4) live on the fields, once.

Always-emit (R12, L4a): every field is written, ``[]``/``""`` when empty. The classes listed
in :data:`OMIT_EMPTY` keep upstream's omitempty shape instead (``GET /:id/wait``, facts §5.10).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

import attrs

from clarion.domain.model import SessionState


def schema(**keywords: Any) -> dict[str, Any]:
    """Field metadata: JSON Schema keywords added to what the field's type gives."""
    return {"schema": {"*": keywords}}


def replaced(whole: dict[str, Any], **dialects: dict[str, Any]) -> dict[str, Any]:
    """Field metadata: the field's whole JSON Schema where its type cannot say it, and per
    dialect (``mcp=...``) where that dialect's schema says it differently."""
    return {
        "schema": {"*": {"replace": whole}}
        | {name: {"replace": other} for name, other in dialects.items()}
    }


def dialects(
    *,
    required: bool | tuple[str, ...] = False,
    hidden: tuple[str, ...] = (),
    **keywords: dict[str, Any],
) -> dict[str, Any]:
    """Field metadata per dialect: ``every={...}``, ``openapi={...}`` and ``mcp={...}`` are
    JSON Schema keywords (a dialect's own over every dialect's); ``required`` is True or the
    dialects whose schema requires the field although the parser has a default for it (the
    domain's validation then names what is missing);
    ``hidden`` names the dialects whose schema leaves the field out (the parser still reads
    it)."""
    by_dialect = {("*" if name == "every" else name): value for name, value in keywords.items()}
    return {"schema": by_dialect, "required": required, "hidden": hidden}


def described(text: str, **keywords: Any) -> dict[str, Any]:
    """Field metadata: a tool argument's description (MCP only; ``$list_pending`` stands for
    that tool's configured name) plus MCP ``keywords``."""
    return dialects(mcp={"description": text, **keywords})


_COUNT: Final = schema(minimum=0)
# Issue #33: the additive ``approval`` object of a listed or history item — left out (not
# null) on plain questions, so their bytes stay as they were.
# The MCP tools' pinned schemas do not carry it (the tools' output never holds it).
_APPROVAL: Final = {
    **replaced({"$ref": "#/components/schemas/ApprovalSummary"}),
    "hidden": ("mcp",),
    "omit_none": True,
}
# Not blank: a REST body's schema says so (minLength 1); the ask tool's, upstream's, does not.
_NON_BLANK: Final = {"minLength": 1}
_FROM_LISTING: Final = "from $list_pending"


# --- answers and resolutions ------------------------------------------------------------------


@attrs.frozen
class Answer:
    """One answer in a resolution (R12: every key always present)."""

    question_id: str
    selected_options: list[str]
    custom_text: str


@attrs.frozen
class Response:
    """``SerializeResponse`` (upstream facts §5.9) with R12's always-present keys."""

    pending_id: str
    answers: list[Answer]
    rejected: bool
    reject_reason: str
    responded_at: datetime


_STATUS: Final = {
    "schema": {"mcp": {"replace": {"type": "string", "enum": ["answered", "rejected"]}}}
}


@attrs.frozen
class Resolution:
    """The MCP ``answer_question`` result: ``claimed``, ``status`` and ``response`` (N3, N4)."""

    claimed: bool
    status: Literal["answered", "rejected"] = attrs.field(metadata=_STATUS)
    response: Response


@attrs.frozen
class RespondResult:
    """The REST ``respond`` 200 body (R10, R11): ``success`` plus the MCP result's keys."""

    success: Literal[True]
    claimed: bool
    status: Literal["answered", "rejected"] = attrs.field(metadata=_STATUS)
    response: Response


@attrs.frozen(kw_only=True)
class WaitAnswer:
    """One answer of ``GET /:id/wait``: empty fields omitted (facts §5.10)."""

    question_id: str
    selected_options: list[str] = attrs.field(factory=list, metadata=schema(minItems=1))
    custom_text: str = attrs.field(default="", metadata=schema(minLength=1))


@attrs.frozen(kw_only=True)
class WaitResponse:
    """What ``GET /:id/wait`` returns: upstream's Response in its omitempty shape (A4)."""

    pending_id: str
    answers: list[WaitAnswer] = attrs.field(factory=list, metadata=schema(minItems=1))
    rejected: bool = attrs.field(default=False, metadata=replaced({"const": True}))
    reject_reason: str = attrs.field(default="", metadata=schema(minLength=1))
    responded_at: datetime


@attrs.frozen
class AskedAnswer:
    """One question's entry in the ask tool's result (facts §2.9; §9.25 fixed: every selected
    option, with the first also as ``selected_option`` for agents written against upstream)."""

    answered: bool
    selected_option: str
    selected_options: list[str]
    custom_text: str
    rejected: bool


# --- the pending listing ----------------------------------------------------------------------


@attrs.frozen
class Option:
    option_id: str
    label: str
    description: str


@attrs.frozen
class ListedQuestion:
    question_id: str
    title: str
    prompt: str
    status: str
    options: list[Option]


@attrs.frozen
class ListedBundle:
    """L3/L4 with L4a: every field present; strings default to "", arrays to []."""

    pending_id: str
    task_id: str
    session_id: str
    created_at: datetime
    age_seconds: int = attrs.field(metadata=_COUNT)
    context: str
    questions: list[ListedQuestion]
    approval: ApprovalSummary | None = attrs.field(default=None, metadata=_APPROVAL)


@attrs.frozen
class PendingPage:
    """L11: ``{"bundles", "count", "next_cursor"}``; ``count`` equals ``len(bundles)``."""

    bundles: list[ListedBundle]
    count: int = attrs.field(metadata=_COUNT)
    next_cursor: str


# --- the resolved list (issue #20; REST only) --------------------------------------------------

ResolverKind = Literal["user", "agent", "system", "standing_approval", "unknown"]
ResolverSurface = Literal[
    "rest",
    "mcp",
    "inbox",
    "cli",
    "agent_client",
    "mcp_app",
    "email",
    "slack",
    "deadline",
    "standing_approval",
    "unknown",
]


@attrs.frozen
class Resolver:
    """Who resolved a bundle, and where (``unknown`` for bundles resolved before it was
    recorded)."""

    identity_id: str
    kind: ResolverKind
    display_name: str
    surface: ResolverSurface


@attrs.frozen
class ResolvedBundle:
    """One resolved bundle: what was asked, the outcome (R12's response shape, the winner's),
    who resolved it and when (``resolved_at`` equals ``response.responded_at``)."""

    pending_id: str
    task_id: str
    session_id: str
    created_at: datetime
    context: str
    questions: list[ListedQuestion]
    status: Literal["answered", "rejected"]
    response: Response
    resolved_by: Resolver
    resolved_at: datetime
    approval: ApprovalSummary | None = attrs.field(default=None, metadata=_APPROVAL)


ClosedReason = Literal["superseded", "session_ended", "expired", "cancelled"]
_NULL: Final = replaced({"type": "null"})


@attrs.frozen
class ClosedBundle:
    """Issue #30 (``?include=closed``): a bundle that left the pending list without an
    answer — ``closed_reason`` says why, ``closed_at`` when; ``response`` and ``resolved_by``
    are null, and ``resolved_at`` equals ``closed_at`` (the list's one order)."""

    pending_id: str
    task_id: str
    session_id: str
    created_at: datetime
    context: str
    questions: list[ListedQuestion]
    status: Literal["closed"]
    closed_reason: ClosedReason
    closed_at: datetime
    response: None = attrs.field(metadata=_NULL)
    resolved_by: None = attrs.field(metadata=_NULL)
    resolved_at: datetime
    approval: ApprovalSummary | None = attrs.field(default=None, metadata=_APPROVAL)


@attrs.frozen
class ResolvedPage:
    """``{"bundles", "count", "next_cursor"}`` like the pending list, newest first; closed
    bundles only when asked for (issue #30)."""

    bundles: list[ResolvedBundle | ClosedBundle]
    count: int = attrs.field(metadata=_COUNT)
    next_cursor: str


# --- host records -----------------------------------------------------------------------------

_ACTION: Final = replaced(
    {"type": ["string", "null"], "enum": ["clarification", None]},
    mcp={"type": ["string", "null"], "enum": ["clarification", "permission", None]},
)


@attrs.frozen
class Task:
    """One listed task; both pending-action keys always present, ``null`` when none (T2)."""

    id: str
    title: str
    workspace_id: str
    created_at: datetime
    task_pending_action: Literal["clarification"] | None = attrs.field(metadata=_ACTION)
    primary_session_pending_action: Literal["clarification"] | None = attrs.field(metadata=_ACTION)


_NEXT_CURSOR: Final = schema(description="The cursor of the next page; empty on the last page")


@attrs.frozen
class TaskList:
    """REST ``GET /tasks``: ``{"tasks": [...], "total", "next_cursor"}``; ``total`` is the
    number of tasks on this page."""

    tasks: list[Task]
    total: int = attrs.field(metadata=_COUNT)
    next_cursor: str = attrs.field(metadata=_NEXT_CURSOR)


@attrs.frozen
class ToolTaskList:
    """``list_tasks_kandev``: ``{"tasks": [...], "total"}`` (interfaces.md; no cursor: the
    tool's input takes none, so its result is capped at ``CLARION_MAX_PAGE_SIZE`` tasks)."""

    tasks: list[Task]
    total: int = attrs.field(metadata=_COUNT)


# --- the live request (GET /:id) ----------------------------------------------------------


@attrs.frozen
class LiveQuestion:
    """A question as upstream's Request carries it (facts §2.1): every key always present."""

    id: str
    title: str
    prompt: str
    options: list[Option]


@attrs.frozen(kw_only=True)
class LiveRequest:
    """Upstream's Request JSON (facts §2.1): ``context`` omitted when empty (A4: unchanged)."""

    pending_id: str
    session_id: str
    task_id: str
    questions: list[LiveQuestion]
    context: str = attrs.field(default="", metadata=schema(minLength=1))
    created_at: datetime


@attrs.frozen
class Created:
    pending_id: str


@attrs.frozen
class Success:
    success: Literal[True]


# --- the reference host's records ---------------------------------------------------------

_SESSION_STATE: Final = replaced({"enum": list(SessionState.ALL)})


@attrs.frozen
class Workspace:
    id: str
    name: str
    owner_id: str
    created_at: datetime


@attrs.frozen
class WorkspaceList:
    """``total`` is the number of workspaces on this page."""

    workspaces: list[Workspace]
    total: int = attrs.field(metadata=_COUNT)
    next_cursor: str = attrs.field(metadata=_NEXT_CURSOR)


@attrs.frozen
class Session:
    id: str
    task_id: str
    state: str = attrs.field(metadata=_SESSION_STATE)
    is_primary: bool
    created_at: datetime | None
    updated_at: datetime | None


@attrs.frozen
class CreatedSession(Session):
    """A new session with its first turn; the agent token is shown this once."""

    current_turn_id: str
    agent_token: str


@attrs.frozen
class Turn:
    id: str
    session_id: str
    started_at: datetime
    created_at: datetime
    completed_at: datetime | None


@attrs.frozen
class Detached:
    detached: int = attrs.field(metadata=_COUNT)


@attrs.frozen
class Message:
    """A transcript row; ``metadata`` is the stored JSON object as it is."""

    id: str
    session_id: str
    task_id: str
    turn_id: str
    type: str
    author_type: str
    content: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime


@attrs.frozen
class MessageList:
    messages: list[Message]
    next_cursor: str = attrs.field(metadata=_NEXT_CURSOR)


@attrs.frozen
class ResumeList:
    resumes: list[Message]
    next_cursor: str = attrs.field(metadata=_NEXT_CURSOR)


# --- identity, health and errors -------------------------------------------------------------


@attrs.frozen
class Me:
    """Who the caller is — ``display_name`` is the user's name (what the inbox's header
    shows) — and the CSRF token of a cookie session."""

    user_id: str
    display_name: str
    is_admin: bool
    auth_enabled: bool
    authenticated_by: Literal["disabled", "token", "session", "none"]
    csrf_token: str


@attrs.frozen
class LoggedIn:
    """The login answer: the caller as a cookie session, and when that session expires."""

    user_id: str
    display_name: str
    is_admin: bool
    auth_enabled: bool
    authenticated_by: Literal["session"]
    csrf_token: str
    expires_at: datetime


@attrs.frozen
class Health:
    status: Literal["ok"]
    database: Literal["ok"]


@attrs.frozen
class Error:
    """Every REST failure body (R10). ``field`` (issue #32, additive as R11 allows) is the JSON
    path of the offending value on a validation failure (``answers[0].selected_options``,
    ``reject_reason``, ``limit``); the key is left out of every other body."""

    error: str
    field: str = attrs.field(
        default="",
        metadata=schema(
            description=(
                "On a 400 for invalid input: the offending field's JSON path, e.g. "
                "answers[0].selected_options; absent on every other error."
            )
        ),
    )


# --- request bodies ---------------------------------------------------------------------------
# Lenient where the domain validates (it names the offending field in its own words), strict
# about types and unknown fields (the converter names the JSON path). Not blank (``minLength``
# 1): the server trims and refuses an empty result (a 400 naming the field); no ``pattern``
# says so, because JSON Schema's \s and Python's str.strip disagree at the edges.


@attrs.frozen
class AnswerIn:
    """One answer of a respond body or of the answer tool's ``answers``."""

    question_id: str = attrs.field(
        default="",
        metadata=dialects(
            required=("mcp",),
            mcp={"description": f"The question's question_id, {_FROM_LISTING}."},
        ),
    )
    selected_options: list[str] | None = attrs.field(
        default=None,
        metadata=described("Zero or more option IDs returned for this question.", type="array"),
    )
    custom_text: str = attrs.field(
        default="", metadata=described("Free-text answer for this question.")
    )


@attrs.frozen
class RespondRequest:
    """``POST /:id/respond`` and the MCP answer tool's arguments (``pending_id`` aside)."""

    answers: list[AnswerIn] | None = None
    rejected: bool = False
    reject_reason: str = ""


@attrs.frozen
class OptionIn:
    """An option of ``POST /request`` or of the ask tool (which does not advertise
    ``option_id``)."""

    label: str = attrs.field(
        default="",
        metadata=dialects(
            required=True,
            openapi=_NON_BLANK,
            mcp={"description": "Short text (1-5 words) shown as the clickable option."},
        ),
    )
    description: str = attrs.field(
        default="",
        metadata=dialects(
            required=True,
            openapi=_NON_BLANK,
            mcp={"description": "Brief explanation of what this option means."},
        ),
    )
    option_id: str | None = attrs.field(default=None, metadata=dialects(hidden=("mcp",)))


@attrs.frozen
class QuestionIn:
    """A question of ``POST /request`` or of the ask tool."""

    id: str | None = attrs.field(
        default=None,
        metadata=described(
            "Stable identifier used as the key in the response map. Auto-assigned "
            "(q1, q2, ...) if omitted.",
            type="string",
        ),
    )
    title: str = attrs.field(
        default="", metadata=described("Optional short label (≤12 chars) shown above the prompt.")
    )
    prompt: str = attrs.field(
        default="",
        metadata=dialects(
            required=True,
            openapi=_NON_BLANK,
            mcp={"description": "The question text shown to the user."},
        ),
    )
    options: list[OptionIn] | None = attrs.field(
        default=None,
        metadata=dialects(
            required=True,
            every={"type": "array", "minItems": 2, "maxItems": 6},
            mcp={"description": "2-6 concrete, actionable choices."},
        ),
    )


@attrs.frozen
class CreateRequest:
    """``POST /request``; ``questions`` is parsed entry by entry as :class:`QuestionIn`."""

    session_id: str
    questions: list[Any] = attrs.field(
        metadata=replaced(
            {
                "type": "array",
                "items": {"$ref": "#/components/schemas/QuestionIn"},
                "minItems": 1,
                "maxItems": 4,
            }
        )
    )
    task_id: str = ""
    context: str = ""


@attrs.frozen
class WorkspaceIn:
    name: str = attrs.field(metadata=schema(minLength=1))
    owner_id: str | None = None


@attrs.frozen
class TaskIn:
    title: str = attrs.field(metadata=schema(minLength=1))
    workspace_id: str = ""


@attrs.frozen
class SessionIn:
    is_primary: bool = False


@attrs.frozen
class SessionPatch:
    state: str = attrs.field(metadata=_SESSION_STATE)


@attrs.frozen
class LoginIn:
    token: str


# --- notification routes (issue #17; docs/notifications.md) ------------------------------


@attrs.frozen(kw_only=True)
class NotificationRouteIn:
    """A route to add: ``channel`` is ``email:ADDRESS``, ``webhook:URL`` or ``apprise:URL``;
    ``events`` empty means every event."""

    channel: str = attrs.field(metadata=schema(minLength=1))
    workspace_id: str = ""
    user_id: str = ""
    events: list[str] = attrs.field(factory=list)
    remind_after_s: float | None = None
    escalate_after_s: float | None = None
    escalate_to: str = ""
    deadline_after_s: float | None = None
    on_deadline: str = "keep"
    include_answers: bool = False


@attrs.frozen(kw_only=True)
class NotificationRoute:
    id: str
    workspace_id: str
    channel: str
    user_id: str
    events: list[str]
    remind_after_s: float | None
    escalate_after_s: float | None
    escalate_to: str
    deadline_after_s: float | None
    on_deadline: str
    include_answers: bool
    created_by: str
    created_at: datetime
    # A webhook route's signing secret (issue #29): every POST carries Clarion-Signature
    # under it (unless the server signs with CLARION_NOTIFY_WEBHOOK_SECRET); "" otherwise.
    # Shown only to those who manage the route.
    secret: str = ""


@attrs.frozen
class NotificationRouteList:
    routes: list[NotificationRoute]
    total: int = attrs.field(metadata=_COUNT)


# --- approvals (issue #33) --------------------------------------------------------------------


@attrs.frozen
class ActionModel:
    """The exact action an approval is for: a name and a JSON object of arguments."""

    name: str
    arguments: dict[str, Any]


@attrs.frozen
class CandidatesModel:
    """Who may decide: user and group names (an id where a name is unknown); both empty
    means anyone who may see the task."""

    users: list[str]
    groups: list[str]


@attrs.frozen
class VoteModel:
    """One person's vote on an approval request."""

    voter: str
    display_name: str
    decision: Literal["approve", "deny"]
    comment: str
    surface: str
    at: datetime | None


@attrs.frozen
class DecidedBy:
    """Who decided an approval request: the deciding voter, the system (a deadline's default)
    or a standing approval (``kind`` standing_approval, ``identity_id`` its id)."""

    identity_id: str
    kind: ResolverKind
    display_name: str
    surface: ResolverSurface
    at: datetime | None


@attrs.frozen(kw_only=True)
class ApprovalView:
    """An approval request as every surface returns it; every key always present."""

    pending_id: str
    status: Literal["pending", "approved", "denied", "closed"]
    action: ActionModel
    action_digest: str
    reason: str
    required_approvals: int = attrs.field(metadata=_COUNT)
    approvals: int = attrs.field(metadata=_COUNT)
    candidates: CandidatesModel
    votes: list[VoteModel]
    decision: Literal["approve", "deny"] | None
    comment: str
    decided_by: DecidedBy | None
    decided_at: datetime | None
    standing_approval_id: str | None
    closed_reason: str
    task_id: str
    session_id: str
    created_at: datetime


@attrs.frozen
class ApprovalSummary:
    """The additive ``approval`` object of a pending-list or history item that is an approval
    request (absent on plain questions)."""

    action: ActionModel
    action_digest: str
    reason: str
    required_approvals: int = attrs.field(metadata=_COUNT)
    approvals: int = attrs.field(metadata=_COUNT)
    candidates: CandidatesModel


@attrs.frozen
class ApprovalList:
    """``GET /approvals``: one page of approval requests."""

    approvals: list[ApprovalView]
    count: int = attrs.field(metadata=_COUNT)
    next_cursor: str = attrs.field(metadata=_NEXT_CURSOR)


@attrs.frozen
class StandingApprovalModel:
    """A standing approval: later matching requests in its workspace are approved at once."""

    id: str
    workspace_id: str
    action_name: str
    constraints: dict[str, Any]
    granted_by_id: str
    granted_by_name: str
    granted_at: datetime
    expires_at: datetime
    source_pending_id: str
    revoked_at: datetime | None
    revoked_by_id: str
    active: bool


@attrs.frozen
class DecisionResult:
    """``POST /approvals/{id}/decision``: the request as it now stands, the caller's vote as
    stored (null when nothing was recorded), whether this call counted, and the standing
    approval it granted (null when none)."""

    approval: ApprovalView
    vote: VoteModel | None
    counted: bool
    standing_approval: StandingApprovalModel | None


@attrs.frozen
class VotePending:
    """The 202 of ``respond`` on an approval request: the vote was recorded (or was a repeat)
    and the request still waits for ``required`` approvals."""

    status: Literal["pending"]
    approvals: int = attrs.field(metadata=_COUNT)
    required: int = attrs.field(metadata=_COUNT)
    counted: bool


@attrs.frozen
class StandingApprovalList:
    standing_approvals: list[StandingApprovalModel]
    total: int = attrs.field(metadata=_COUNT)


@attrs.frozen
class GroupModel:
    id: str
    name: str
    created_at: datetime
    members: list[str]


@attrs.frozen
class GroupList:
    groups: list[GroupModel]
    total: int = attrs.field(metadata=_COUNT)


@attrs.frozen
class ActionIn:
    name: str = attrs.field(metadata=schema(minLength=1))
    arguments: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class CandidatesIn:
    """Candidates by user name (or id) and group name."""

    users: list[str] = attrs.field(factory=list)
    groups: list[str] = attrs.field(factory=list)


@attrs.frozen
class ApprovalRequestIn:
    """``POST /approvals/request``."""

    session_id: str
    action: ActionIn
    task_id: str = ""
    reason: str = ""
    required_approvals: int = 1
    candidates: CandidatesIn = attrs.field(factory=CandidatesIn)


@attrs.frozen
class DecisionIn:
    """``POST /approvals/{id}/decision``; ``allow_for_minutes`` (approve only) also grants a
    standing approval whose argument ``constraints`` are ``{"arg": {"equals": v} |
    {"prefix": "s"} | {"any": true}}`` (unnamed arguments must equal this action's)."""

    decision: Literal["approve", "deny"]
    comment: str = ""
    allow_for_minutes: int | None = None
    constraints: dict[str, Any] | None = None


@attrs.frozen
class GroupIn:
    name: str = attrs.field(metadata=schema(minLength=1))


# --- MCP tool arguments and the ask tool's result -----------------------------------------
# Parsed by :mod:`clarion.adapters.mcp.arguments` (the nested answers and questions through
# the shared converter, as REST does); these classes are the tools' published input schemas.


@attrs.frozen
class ListPendingInput:
    """``list_pending_questions`` arguments; "" and None mean "not supplied" (L7a.4, L10)."""

    workspace_id: str = attrs.field(
        default="",
        metadata=described(
            "Optional workspace ID filter. Omit to list across every workspace visible to the "
            "caller."
        ),
    )
    created_since: str = attrs.field(
        default="",
        metadata=described(
            "Optional RFC3339 timestamp; only bundles created at or after this time are returned."
        ),
    )
    cursor: str = attrs.field(
        default="",
        metadata=described("Optional opaque pagination cursor from a previous call's next_cursor."),
    )
    # Any JSON number: a fractional page size is truncated, then clamped (L10).
    limit: int | None = attrs.field(
        default=None,
        metadata=described("Optional page size (default 50, max 200).", type="number"),
    )


@attrs.frozen
class AnswerInput:
    """``answer_question`` arguments: ``pending_id`` (N9: the one required argument) and a
    respond body (:class:`RespondRequest`)."""

    pending_id: str = attrs.field(
        metadata=described(f"The bundle's pending_id, {_FROM_LISTING}."),
    )
    answers: list[AnswerIn] | None = attrs.field(
        default=None,
        metadata=described("One entry per question in the bundle, in any order.", type="array"),
    )
    rejected: bool = attrs.field(
        default=False, metadata=described("Reject the whole bundle instead of answering it.")
    )
    reject_reason: str = attrs.field(
        default="", metadata=described("Optional reason shown alongside a rejection.")
    )


@attrs.frozen
class ListTasksInput:
    """``list_tasks`` arguments (T1, T2)."""

    workspace_id: str = attrs.field(
        default="",
        metadata=described(
            "Optional workspace ID filter. Omit to list tasks across every workspace visible to "
            "the caller."
        ),
    )


@attrs.frozen
class AskInput:
    """``ask_user_question`` arguments (facts §2.2)."""

    questions: list[QuestionIn] = attrs.field(
        metadata=described(
            'Array of 1-4 question objects. Each question must have a "prompt" (the question '
            'text) and an "options" array (2-6 entries with label + description). Optional '
            'fields: "id" (stable identifier in the response map; auto-generated if omitted), '
            '"title" (≤12 chars short label).',
            minItems=1,
            maxItems=4,
        )
    )
    context: str = attrs.field(
        default="",
        metadata=described(
            "Optional single block of shared background information. Preserved verbatim; use "
            "context_paragraphs for multiple paragraphs."
        ),
    )
    context_paragraphs: list[str] | None = attrs.field(
        default=None,
        metadata=described(
            "Optional shared background as separate paragraphs. Preferred for multiline "
            "context; when non-empty, overrides context and is joined with blank lines.",
            type="array",
        ),
    )


@attrs.frozen
class EarlierAnswer:
    """The outcome of an earlier ask of the same agent whose call ended before it came,
    handed over once with a later ask's result (issue #28): ``answers`` is that ask's own
    result (the shape of this one), or null when the question closed without an answer."""

    pending_id: str
    status: Literal["answered", "closed"]
    answers: dict[str, Any] | None


@attrs.frozen
class AskOutput:
    """The ask tool's result (facts §2.9): ``rejected`` and ``reject_reason`` always, and every
    other key a question id holding its :class:`AskedAnswer` (the keys are the agent's own);
    ``earlier_answers`` only when earlier asks' late outcomes are handed over (issue #28)."""

    rejected: bool
    reject_reason: str
    earlier_answers: list[EarlierAnswer] | None = None


TOOL_INPUTS: Final[tuple[type[Any], ...]] = (
    ListPendingInput,
    AnswerInput,
    ListTasksInput,
    AskInput,
)
"""The MCP tools' arguments, whose input schemas are generated from them."""

OTHER_PROPERTIES_IN_MCP: Final[dict[type[Any], type[Any]]] = {AskOutput: AskedAnswer}
"""Shapes whose MCP schema gives every property it does not name the mapped model's schema."""

REQUESTS: Final[tuple[type[Any], ...]] = (
    AnswerIn,
    RespondRequest,
    OptionIn,
    QuestionIn,
    CreateRequest,
    WorkspaceIn,
    TaskIn,
    SessionIn,
    SessionPatch,
    LoginIn,
    NotificationRouteIn,
    ActionIn,
    CandidatesIn,
    ApprovalRequestIn,
    DecisionIn,
    GroupIn,
)
"""Every request body the REST routes read (and the MCP answer tool's arguments)."""

OPEN_IN_MCP: Final[frozenset[type[Any]]] = frozenset({Task, AnswerIn, QuestionIn, OptionIn})
"""Shapes whose MCP schema admits properties it does not name (upstream's nested argument
objects are open; the parser still refuses unknown fields, naming them)."""

OMIT_EMPTY: Final[frozenset[type[Any]]] = frozenset({WaitAnswer, WaitResponse, LiveRequest, Error})
"""Shapes that leave out fields equal to their default (upstream's omitempty; an error's
``field`` when it names none)."""

SHAPES: Final[tuple[type[Any], ...]] = (
    Answer,
    Response,
    Resolution,
    RespondResult,
    WaitAnswer,
    WaitResponse,
    AskedAnswer,
    Option,
    ListedQuestion,
    ListedBundle,
    PendingPage,
    Resolver,
    ResolvedBundle,
    ClosedBundle,
    ResolvedPage,
    Task,
    TaskList,
    LiveQuestion,
    LiveRequest,
    Created,
    Success,
    Workspace,
    WorkspaceList,
    Session,
    CreatedSession,
    Turn,
    Detached,
    Message,
    MessageList,
    ResumeList,
    Me,
    LoggedIn,
    Health,
    Error,
    NotificationRoute,
    NotificationRouteList,
    ActionModel,
    CandidatesModel,
    VoteModel,
    DecidedBy,
    ApprovalView,
    ApprovalSummary,
    ApprovalList,
    StandingApprovalModel,
    DecisionResult,
    VotePending,
    StandingApprovalList,
    GroupModel,
    GroupList,
)
"""Every output shape, for the round-trip property test and the schema generator."""
