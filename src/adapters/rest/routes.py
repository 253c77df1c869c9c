"""The REST surface's one route table: every route's path, method and OpenAPI operation.

:func:`starlette_routes` serves it (each operation's endpoint looked up by its operation id)
and :func:`clarion.adapters.rest.openapi.openapi_document` documents it, so a route cannot be
served without being documented, nor documented without being served.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from clarion.adapters.rest.schemas import STRING, Schema

JSON: Final = "application/json"
API: Final = "/api/v1"
CLARIFICATION: Final = f"{API}/clarification"
SESSION: Final = f"{API}/sessions/{{session_id}}"
NOTIFICATION_ROUTES: Final = f"{API}/notifications/routes"
APPROVALS: Final = f"{API}/approvals"
GROUPS: Final = f"{API}/groups"

Endpoint = Callable[[Request], Awaitable[Response]]


def _path_parameter(name: str) -> Schema:
    return {"name": name, "in": "path", "required": True, "schema": STRING}


def _query_parameter(name: str, schema: Schema, description: str) -> Schema:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": schema,
        "description": description,
    }


# The host lists' keyset pages (domain.paging): the same cursor codec as the pending list, but
# a limit out of range is refused (400 naming limit) rather than clamped.
_PAGE: Final = (
    _query_parameter("cursor", STRING, "A previous page's next_cursor"),
    _query_parameter(
        "limit",
        {"type": "integer"},
        "Page size: default 50 (CLARION_DEFAULT_PAGE_SIZE), at most 200 "
        "(CLARION_MAX_PAGE_SIZE); outside 1 to the maximum is a 400",
    ),
)
_PENDING_ID: Final = _path_parameter("pending_id")
_TASK_ID: Final = _path_parameter("task_id")
_SESSION_ID: Final = _path_parameter("session_id")


@attrs.frozen
class RouteSpec:
    """One route. ``ok`` is (status, component name, description); ``errors`` the statuses
    it documents beyond those its kind implies (a body: 400, 413, 415; a write: 415; with
    auth enabled and ``protected``: 401; ``guarded`` by the HTTP guard: 403, 421;
    ``internal_errors``: 500). ``ok_schema`` states the success schema inline instead."""

    path: str
    method: str
    operation_id: str
    summary: str
    ok: tuple[int, str, str]
    errors: tuple[int, ...] = ()
    body: str | None = None
    parameters: tuple[Schema, ...] = ()
    protected: bool = True
    write: bool = False
    guarded: bool = True
    internal_errors: bool = True
    ok_media: str = JSON
    ok_schema: Schema | None = None
    # Further success answers: (status, component name, description), e.g. respond's 202.
    also: tuple[tuple[int, str, str], ...] = ()


TABLE: Final[tuple[RouteSpec, ...]] = (
    RouteSpec(
        f"{CLARIFICATION}/request",
        "POST",
        "createClarification",
        "Create a bundle of 1-4 questions for a session the caller may see",
        ok=(
            200,
            "Created",
            "The bundle's pending id (an identical live bundle's, when one exists)",
        ),
        errors=(404, 409, 429),
        body="CreateRequest",
        write=True,
    ),
    RouteSpec(
        f"{CLARIFICATION}/pending",
        "GET",
        "listPendingClarifications",
        "The active bundles the caller may see, oldest first (L1-L16)",
        ok=(200, "PendingPage", "One page of bundles"),
        errors=(400,),
        parameters=(
            _query_parameter("workspace_id", STRING, "Only this workspace's bundles"),
            _query_parameter("created_since", STRING, "RFC 3339; bundles created at or after it"),
            _query_parameter("cursor", STRING, "A previous page's next_cursor"),
            _query_parameter(
                "limit", {"type": "integer"}, "Page size: default 50, clamped to 1-200"
            ),
        ),
    ),
    RouteSpec(
        f"{CLARIFICATION}/resolved",
        "GET",
        "listResolvedClarifications",
        "The settled bundles the caller may see, newest first, with who resolved them",
        ok=(200, "ResolvedPage", "One page of resolved bundles"),
        errors=(400,),
        parameters=(
            _query_parameter("cursor", STRING, "A previous page's next_cursor"),
            _query_parameter(
                "limit", {"type": "integer"}, "Page size: default 50, clamped to 1-200"
            ),
            _query_parameter(
                "include",
                {"type": "string", "enum": ["closed"]},
                "closed: also the bundles closed without an answer (status closed, with "
                "closed_reason), in the same order (issue #30)",
            ),
        ),
    ),
    RouteSpec(
        f"{CLARIFICATION}/{{pending_id}}",
        "GET",
        "getClarification",
        "The live request, while its agent still waits on it",
        ok=(200, "LiveRequest", "The live request"),
        errors=(404,),
        parameters=(_PENDING_ID,),
    ),
    RouteSpec(
        f"{CLARIFICATION}/{{pending_id}}/wait",
        "GET",
        "waitForClarification",
        "Block until the bundle is answered or rejected",
        ok=(200, "WaitResponse", "The resolution (empty fields omitted)"),
        errors=(404, 504),
        parameters=(_PENDING_ID,),
    ),
    RouteSpec(
        f"{CLARIFICATION}/{{pending_id}}/respond",
        "POST",
        "respondToClarification",
        "Answer or reject a bundle; a loser is told the winner's resolution",
        ok=(200, "RespondResult", "Won (claimed: true) or replayed (claimed: false)"),
        also=(
            (
                202,
                "VotePending",
                "An approval request's vote was recorded (or was a repeat) and did not "
                "decide it (issue #33)",
            ),
        ),
        errors=(404, 409),
        body="RespondRequest",
        parameters=(_PENDING_ID,),
        write=True,
    ),
    RouteSpec(
        f"{CLARIFICATION}/{{pending_id}}/cancel",
        "POST",
        "cancelClarification",
        "Operator cancel of a bundle whose agent still waits (never claimed)",
        ok=(200, "Success", "Cancelled"),
        errors=(404, 409),
        parameters=(_PENDING_ID,),
        write=True,
    ),
    RouteSpec(
        "/api/v1/workspaces",
        "POST",
        "createWorkspace",
        'Create a workspace (a scoped caller owns it unless owner_id is "")',
        ok=(201, "Workspace", "The workspace"),
        body="WorkspaceIn",
        write=True,
    ),
    RouteSpec(
        "/api/v1/workspaces",
        "GET",
        "listWorkspaces",
        "The workspaces the caller may see",
        ok=(200, "WorkspaceList", "Visible workspaces, oldest first"),
        errors=(400,),
        parameters=_PAGE,
    ),
    RouteSpec(
        "/api/v1/tasks",
        "POST",
        "createTask",
        "Create a task, optionally in a visible workspace",
        ok=(201, "Task", "The task"),
        errors=(404,),
        body="TaskIn",
        write=True,
    ),
    RouteSpec(
        "/api/v1/tasks",
        "GET",
        "listTasks",
        "The tasks the caller may see, with their pending actions (T1, T2)",
        ok=(200, "TaskList", "Visible tasks, oldest first"),
        errors=(400,),
        parameters=(
            _query_parameter("workspace_id", STRING, "Only this workspace's tasks"),
            *_PAGE,
        ),
    ),
    RouteSpec(
        "/api/v1/tasks/{task_id}/sessions",
        "POST",
        "createSession",
        "Start a RUNNING session with its first turn; the agent token is shown once",
        ok=(201, "CreatedSession", "The session and its agent token"),
        errors=(404,),
        body="SessionIn",
        parameters=(_TASK_ID,),
        write=True,
    ),
    RouteSpec(
        SESSION,
        "GET",
        "getSession",
        "One session",
        ok=(200, "Session", "The session"),
        errors=(404,),
        parameters=(_SESSION_ID,),
    ),
    RouteSpec(
        SESSION,
        "PATCH",
        "setSessionState",
        "Set a session's state; COMPLETED, FAILED or CANCELLED expire its bundles",
        ok=(200, "Session", "The updated session"),
        errors=(404,),
        body="SessionPatch",
        parameters=(_SESSION_ID,),
        write=True,
    ),
    RouteSpec(
        f"{SESSION}/turns",
        "POST",
        "startTurn",
        "Start a newer turn (older pending bundles become superseded)",
        ok=(201, "Turn", "The new current turn"),
        errors=(404,),
        parameters=(_SESSION_ID,),
        write=True,
    ),
    RouteSpec(
        f"{SESSION}/turns/current/complete",
        "POST",
        "completeTurn",
        "The agent's turn ended: release live waiters, detach active bundles",
        ok=(200, "Detached", "How many bundles were detached"),
        errors=(404,),
        parameters=(_SESSION_ID,),
        write=True,
    ),
    RouteSpec(
        f"{SESSION}/messages",
        "GET",
        "listMessages",
        "The session's transcript, clarification rows included",
        ok=(200, "MessageList", "Messages, oldest first"),
        errors=(400, 404),
        parameters=(_SESSION_ID, *_PAGE),
    ),
    RouteSpec(
        f"{SESSION}/resumes",
        "GET",
        "listResumes",
        "Resume prompts recorded for detached answers (the outbox)",
        ok=(200, "ResumeList", "Resume messages, oldest first"),
        errors=(400, 404),
        parameters=(_SESSION_ID, *_PAGE),
    ),
    RouteSpec(
        "/api/v1/events",
        "GET",
        "streamEvents",
        "Server-sent events: bundle and session updates the caller may see",
        ok=(200, "", "An endless text/event-stream"),
        errors=(429,),
        ok_media="text/event-stream",
    ),
    RouteSpec(
        "/api/v1/auth/login",
        "POST",
        "login",
        "Exchange a personal access token for an HttpOnly session cookie",
        ok=(200, "LoggedIn", "Signed in; cookies set"),
        errors=(401, 429),
        body="LoginIn",
        protected=False,
    ),
    RouteSpec(
        "/api/v1/auth/logout",
        "POST",
        "logout",
        "End the browser session and clear its cookies",
        ok=(200, "Success", "Signed out"),
        protected=False,
        write=True,
    ),
    RouteSpec(
        "/api/v1/auth/me",
        "GET",
        "me",
        "Who the caller is, and the CSRF token of a cookie session",
        ok=(200, "Me", "The caller"),
    ),
    *(  # issue #33, in matching order (/approvals/request before /approvals/{pending_id})
        RouteSpec(
            f"{APPROVALS}/request",
            "POST",
            "createApproval",
            "Ask permission for one exact action (an approval request)",
            ok=(201, "ApprovalView", "The new request (pending)"),
            also=((200, "ApprovalView", "Approved at once by a standing approval"),),
            errors=(404, 409, 429),
            body="ApprovalRequestIn",
            write=True,
        ),
        RouteSpec(
            APPROVALS,
            "GET",
            "listApprovals",
            "The approval requests the caller may decide or see, pending or decided",
            ok=(200, "ApprovalList", "One page of approval requests"),
            errors=(400,),
            parameters=(
                _query_parameter(
                    "status",
                    {"type": "string", "enum": ["pending", "decided"]},
                    "pending (default: oldest first) or decided (newest first)",
                ),
                *_PAGE,
            ),
        ),
        RouteSpec(
            f"{APPROVALS}/{{pending_id}}",
            "GET",
            "getApproval",
            "One approval request: its action, votes and decision",
            ok=(200, "ApprovalView", "The request"),
            errors=(404,),
            parameters=(_PENDING_ID,),
        ),
        RouteSpec(
            f"{APPROVALS}/{{pending_id}}/wait",
            "GET",
            "waitForApproval",
            "The request once decided or closed, or as it stands after timeout seconds",
            ok=(200, "ApprovalView", "The request (status pending when the wait timed out)"),
            errors=(400, 404),
            parameters=(
                _PENDING_ID,
                _query_parameter(
                    "timeout",
                    {"type": "number", "minimum": 0},
                    "Seconds to wait (default 30, at most CLARION_ASK_TIMEOUT_S)",
                ),
            ),
        ),
        RouteSpec(
            f"{APPROVALS}/{{pending_id}}/decision",
            "POST",
            "decideApproval",
            "Vote approve or deny (quorum, veto, once per person); optionally allow the same "
            "action for N minutes",
            ok=(200, "DecisionResult", "The request as it now stands and the caller's vote"),
            errors=(404, 409),
            body="DecisionIn",
            parameters=(_PENDING_ID,),
            write=True,
        ),
        RouteSpec(
            f"{API}/standing-approvals",
            "GET",
            "listStandingApprovals",
            "Standing approvals of the workspaces the caller sees, newest first",
            ok=(200, "StandingApprovalList", "The standing approvals"),
            errors=(400,),
            parameters=(
                _query_parameter(
                    "include",
                    {"type": "string", "enum": ["inactive"]},
                    "inactive: also the expired and revoked ones",
                ),
            ),
        ),
        RouteSpec(
            f"{API}/standing-approvals/{{standing_id}}/revoke",
            "POST",
            "revokeStandingApproval",
            "Revoke a standing approval (later requests are no longer approved by it)",
            ok=(200, "StandingApprovalModel", "The revoked standing approval"),
            errors=(404,),
            parameters=(_path_parameter("standing_id"),),
            write=True,
        ),
        RouteSpec(
            GROUPS,
            "GET",
            "listGroups",
            "Every group (administrators only)",
            ok=(200, "GroupList", "The groups, by name"),
            errors=(404,),
        ),
        RouteSpec(
            GROUPS,
            "POST",
            "createGroup",
            "Create a group (administrators only)",
            ok=(201, "GroupModel", "The new group"),
            errors=(404,),
            body="GroupIn",
            write=True,
        ),
        RouteSpec(
            f"{GROUPS}/{{name}}",
            "DELETE",
            "deleteGroup",
            "Delete a group and its memberships (administrators only)",
            ok=(200, "Success", "Deleted"),
            errors=(404,),
            parameters=(_path_parameter("name"),),
            write=True,
        ),
        RouteSpec(
            f"{GROUPS}/{{name}}/members/{{user}}",
            "PUT",
            "addGroupMember",
            "Add a user (by name or id) to a group (administrators only)",
            ok=(200, "GroupModel", "The group"),
            errors=(404,),
            parameters=(_path_parameter("name"), _path_parameter("user")),
            write=True,
        ),
        RouteSpec(
            f"{GROUPS}/{{name}}/members/{{user}}",
            "DELETE",
            "removeGroupMember",
            "Remove a user from a group (administrators only)",
            ok=(200, "GroupModel", "The group"),
            errors=(404,),
            parameters=(_path_parameter("name"), _path_parameter("user")),
            write=True,
        ),
    ),
    RouteSpec(
        "/healthz",
        "GET",
        "health",
        "Liveness and database reachability",
        ok=(200, "Health", "Alive, database reachable"),
        errors=(503,),
        protected=False,
        guarded=False,
    ),
    RouteSpec(
        "/openapi.json",
        "GET",
        "openapi",
        "This document",
        ok=(200, "", "The OpenAPI document"),
        protected=False,
        internal_errors=False,
        ok_schema={"type": "object"},
    ),
    RouteSpec(
        NOTIFICATION_ROUTES,
        "POST",
        "addNotificationRoute",
        "Route a workspace's notifications to a channel (admin, or the workspace's owner)",
        ok=(201, "NotificationRoute", "The stored route"),
        errors=(404,),
        body="NotificationRouteIn",
        write=True,
    ),
    RouteSpec(
        NOTIFICATION_ROUTES,
        "GET",
        "listNotificationRoutes",
        "The notification routes the caller may manage, oldest first (404 when the storage "
        "keeps no notifications)",
        ok=(200, "NotificationRouteList", "The routes"),
        errors=(404,),
    ),
    RouteSpec(
        f"{NOTIFICATION_ROUTES}/{{route_id}}",
        "DELETE",
        "removeNotificationRoute",
        "Remove a notification route; its outstanding notifications are dropped",
        ok=(200, "Success", "Removed"),
        errors=(404,),
        parameters=(_path_parameter("route_id"),),
        write=True,
    ),
)
"""Every REST route, in matching order (``/pending`` before ``/{pending_id}``)."""


def starlette_routes(endpoints: Mapping[str, Endpoint]) -> list[Route]:
    """The table's routes served by ``endpoints`` (keyed by operation id), which must name
    exactly the table's operations."""
    documented = {spec.operation_id for spec in TABLE}
    if set(endpoints) != documented:
        missing = sorted(documented - set(endpoints))
        extra = sorted(set(endpoints) - documented)
        raise ValueError(f"route table mismatch: no endpoint for {missing}, unlisted {extra}")
    return [Route(spec.path, endpoints[spec.operation_id], methods=[spec.method]) for spec in TABLE]


def operation_ids(**groups: Mapping[str, Any]) -> dict[str, Any]:
    """Merge endpoint groups, refusing an operation id that two groups both serve."""
    merged: dict[str, Any] = {}
    for group in groups.values():
        for name, endpoint in group.items():
            if name in merged:
                raise ValueError(f"operation {name!r} is served twice")
            merged[name] = endpoint
    return merged
