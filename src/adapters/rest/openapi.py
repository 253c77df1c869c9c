"""``GET /openapi.json``: the OpenAPI 3.1 document of every REST route, written by hand.

The schemas state exactly what the routes send and accept (closed objects, always-present
keys per R12 and L4a, ``null`` only where T2 says so); the schemathesis run in the test suite
holds them to it. With auth enabled every protected operation also documents 401 (it cannot
happen with auth disabled, so it is not listed then). In both modes every operation but
``/healthz`` documents the HTTP guard's 421 (a Host that is not allowed) and 403 (a foreign
Origin, or with auth enabled a cookie write without its CSRF token), and every write its 415
(a body that is not ``application/json``).
"""

from __future__ import annotations

from typing import Final

from clarion.adapters.rest.schemas import SCHEMAS, STRING, Schema, ref

JSON: Final = "application/json"


_ERROR_TEXT: Final = {
    400: "Invalid input; the message names the offending field",
    401: "Authentication required",
    403: "A foreign Origin, or a cookie-authenticated write without its CSRF token",
    404: "Not found, or not visible to the caller (indistinguishable)",
    409: "No longer active",
    413: "Request body over the limit (CLARION_MAX_BODY_BYTES, 1 MiB by default)",
    415: "A write whose body is not application/json",
    421: "A Host header that is not an allowed host name",
    429: "A count limit is reached; the message names its setting",
    500: "Internal failure (never carries a driver's text)",
    503: "The database is unreachable",
    504: "The wait ended without an answer",
}


def _json(schema: Schema, description: str) -> Schema:
    return {"description": description, "content": {JSON: {"schema": schema}}}


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


def _operation(
    operation_id: str,
    summary: str,
    *,
    ok: tuple[int, str, str],
    errors: tuple[int, ...] = (),
    body: str | None = None,
    parameters: tuple[Schema, ...] = (),
    protected: bool = True,
    write: bool = False,
    guarded: bool = True,
    auth_enabled: bool,
    ok_media: str = JSON,
) -> Schema:
    status, schema_name, description = ok
    if ok_media == JSON:
        responses: Schema = {str(status): _json(ref(schema_name), description)}
    else:
        responses = {
            str(status): {"description": description, "content": {ok_media: {"schema": STRING}}}
        }
    codes = set(errors) | {500}
    if body is not None:
        codes |= {400, 413}
    if auth_enabled and protected:
        codes.add(401)
    if guarded:
        codes |= {403, 421}
    if write or body is not None:
        codes.add(415)
    for code in sorted(codes):
        responses[str(code)] = _json(ref("Error"), _ERROR_TEXT[code])
    operation: Schema = {"operationId": operation_id, "summary": summary, "responses": responses}
    if parameters:
        operation["parameters"] = list(parameters)
    if body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {JSON: {"schema": ref(body)}},
        }
    if not protected:
        operation["security"] = []
    return operation


def openapi_document(*, auth_enabled: bool) -> Schema:
    """The OpenAPI 3.1 document for the REST surface in the given auth mode."""
    pending_id = _path_parameter("pending_id")
    task_id = _path_parameter("task_id")
    session_id = _path_parameter("session_id")
    clarification = "/api/v1/clarification"
    session = "/api/v1/sessions/{session_id}"
    paths: Schema = {
        f"{clarification}/request": {
            "post": _operation(
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
                auth_enabled=auth_enabled,
            )
        },
        f"{clarification}/pending": {
            "get": _operation(
                "listPendingClarifications",
                "The active bundles the caller may see, oldest first (L1-L16)",
                ok=(200, "PendingPage", "One page of bundles"),
                errors=(400,),
                parameters=(
                    _query_parameter("workspace_id", STRING, "Only this workspace's bundles"),
                    _query_parameter(
                        "created_since", STRING, "RFC 3339; bundles created at or after it"
                    ),
                    _query_parameter("cursor", STRING, "A previous page's next_cursor"),
                    _query_parameter(
                        "limit", {"type": "integer"}, "Page size: default 50, clamped to 1-200"
                    ),
                ),
                auth_enabled=auth_enabled,
            )
        },
        f"{clarification}/{{pending_id}}": {
            "get": _operation(
                "getClarification",
                "The live request, while its agent still waits on it",
                ok=(200, "LiveRequest", "The live request"),
                errors=(404,),
                parameters=(pending_id,),
                auth_enabled=auth_enabled,
            )
        },
        f"{clarification}/{{pending_id}}/wait": {
            "get": _operation(
                "waitForClarification",
                "Block until the bundle is answered or rejected",
                ok=(200, "WaitResponse", "The resolution (empty fields omitted)"),
                errors=(404, 504),
                parameters=(pending_id,),
                auth_enabled=auth_enabled,
            )
        },
        f"{clarification}/{{pending_id}}/respond": {
            "post": _operation(
                "respondToClarification",
                "Answer or reject a bundle; a loser is told the winner's resolution",
                ok=(200, "RespondResult", "Won (claimed: true) or replayed (claimed: false)"),
                errors=(404, 409),
                body="RespondRequest",
                parameters=(pending_id,),
                write=True,
                auth_enabled=auth_enabled,
            )
        },
        f"{clarification}/{{pending_id}}/cancel": {
            "post": _operation(
                "cancelClarification",
                "Operator cancel of a bundle whose agent still waits (never claimed)",
                ok=(200, "Success", "Cancelled"),
                errors=(404, 409),
                parameters=(pending_id,),
                write=True,
                auth_enabled=auth_enabled,
            )
        },
        "/api/v1/workspaces": {
            "post": _operation(
                "createWorkspace",
                'Create a workspace (a scoped caller owns it unless owner_id is "")',
                ok=(201, "Workspace", "The workspace"),
                body="WorkspaceIn",
                write=True,
                auth_enabled=auth_enabled,
            ),
            "get": _operation(
                "listWorkspaces",
                "The workspaces the caller may see",
                ok=(200, "WorkspaceList", "Visible workspaces, oldest first"),
                auth_enabled=auth_enabled,
            ),
        },
        "/api/v1/tasks": {
            "post": _operation(
                "createTask",
                "Create a task, optionally in a visible workspace",
                ok=(201, "Task", "The task"),
                errors=(404,),
                body="TaskIn",
                write=True,
                auth_enabled=auth_enabled,
            ),
            "get": _operation(
                "listTasks",
                "The tasks the caller may see, with their pending actions (T1, T2)",
                ok=(200, "TaskList", "Visible tasks, oldest first"),
                parameters=(
                    _query_parameter("workspace_id", STRING, "Only this workspace's tasks"),
                ),
                auth_enabled=auth_enabled,
            ),
        },
        "/api/v1/tasks/{task_id}/sessions": {
            "post": _operation(
                "createSession",
                "Start a RUNNING session with its first turn; the agent token is shown once",
                ok=(201, "CreatedSession", "The session and its agent token"),
                errors=(404,),
                body="SessionIn",
                parameters=(task_id,),
                write=True,
                auth_enabled=auth_enabled,
            )
        },
        session: {
            "get": _operation(
                "getSession",
                "One session",
                ok=(200, "Session", "The session"),
                errors=(404,),
                parameters=(session_id,),
                auth_enabled=auth_enabled,
            ),
            "patch": _operation(
                "setSessionState",
                "Set a session's state; COMPLETED, FAILED or CANCELLED expire its bundles",
                ok=(200, "Session", "The updated session"),
                errors=(404,),
                body="SessionPatch",
                parameters=(session_id,),
                write=True,
                auth_enabled=auth_enabled,
            ),
        },
        f"{session}/turns": {
            "post": _operation(
                "startTurn",
                "Start a newer turn (older pending bundles become superseded)",
                ok=(201, "Turn", "The new current turn"),
                errors=(404,),
                parameters=(session_id,),
                write=True,
                auth_enabled=auth_enabled,
            )
        },
        f"{session}/turns/current/complete": {
            "post": _operation(
                "completeTurn",
                "The agent's turn ended: release live waiters, detach active bundles",
                ok=(200, "Detached", "How many bundles were detached"),
                errors=(404,),
                parameters=(session_id,),
                write=True,
                auth_enabled=auth_enabled,
            )
        },
        f"{session}/messages": {
            "get": _operation(
                "listMessages",
                "The session's transcript, clarification rows included",
                ok=(200, "MessageList", "Messages, oldest first"),
                errors=(404,),
                parameters=(session_id,),
                auth_enabled=auth_enabled,
            )
        },
        f"{session}/resumes": {
            "get": _operation(
                "listResumes",
                "Resume prompts recorded for detached answers (the outbox)",
                ok=(200, "ResumeList", "Resume messages, oldest first"),
                errors=(404,),
                parameters=(session_id,),
                auth_enabled=auth_enabled,
            )
        },
        "/api/v1/events": {
            "get": _operation(
                "streamEvents",
                "Server-sent events: bundle and session updates the caller may see",
                ok=(200, "", "An endless text/event-stream"),
                errors=(429,),
                ok_media="text/event-stream",
                auth_enabled=auth_enabled,
            )
        },
        "/api/v1/auth/login": {
            "post": _operation(
                "login",
                "Exchange a personal access token for an HttpOnly session cookie",
                ok=(200, "LoggedIn", "Signed in; cookies set"),
                errors=(401,),
                body="LoginIn",
                protected=False,
                auth_enabled=auth_enabled,
            )
        },
        "/api/v1/auth/logout": {
            "post": _operation(
                "logout",
                "End the browser session and clear its cookies",
                ok=(200, "Success", "Signed out"),
                protected=False,
                write=True,
                auth_enabled=auth_enabled,
            )
        },
        "/api/v1/auth/me": {
            "get": _operation(
                "me",
                "Who the caller is, and the CSRF token of a cookie session",
                ok=(200, "Me", "The caller"),
                auth_enabled=auth_enabled,
            )
        },
        "/healthz": {
            "get": _operation(
                "health",
                "Liveness and database reachability",
                ok=(200, "Health", "Alive, database reachable"),
                errors=(503,),
                protected=False,
                guarded=False,
                auth_enabled=auth_enabled,
            )
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "summary": "This document",
                "security": [],
                "responses": {
                    "200": _json({"type": "object"}, "The OpenAPI document"),
                    **{str(code): _json(ref("Error"), _ERROR_TEXT[code]) for code in (403, 421)},
                },
            }
        },
    }
    document: Schema = {
        "openapi": "3.1.0",
        "info": {
            "title": "Clarion",
            "version": "1",
            "description": "Agents ask people structured clarification questions; anyone "
            "allowed to see a question answers it exactly once.",
        },
        "paths": paths,
        "components": {"schemas": SCHEMAS},
    }
    if auth_enabled:
        document["components"]["securitySchemes"] = {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "A personal access token (clarion_pat_...)",
            },
            "session": {
                "type": "apiKey",
                "in": "cookie",
                "name": "clarion_session",
                "description": "The browser session set by /api/v1/auth/login "
                "(__Host-clarion_session over https); writes also need the X-CSRF-Token header",
            },
        }
        document["security"] = [{"bearer": []}, {"session": []}]
    return document
