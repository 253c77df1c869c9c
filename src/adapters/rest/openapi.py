"""``GET /openapi.json``: the OpenAPI 3.1 document of every route in the one route table
(:mod:`clarion.adapters.rest.routes`), its components generated from the wire models.

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

from clarion.adapters.rest.routes import JSON, TABLE, RouteSpec
from clarion.adapters.rest.schemas import SCHEMAS, STRING, Schema, ref

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


def _operation(spec: RouteSpec, *, auth_enabled: bool) -> Schema:
    status, schema_name, description = spec.ok
    if spec.ok_schema is not None:
        responses: Schema = {str(status): _json(spec.ok_schema, description)}
    elif spec.ok_media == JSON:
        responses = {str(status): _json(ref(schema_name), description)}
    else:
        responses = {
            str(status): {
                "description": description,
                "content": {spec.ok_media: {"schema": STRING}},
            }
        }
    for extra, name, text in spec.also:
        responses[str(extra)] = _json(ref(name), text)
    codes = set(spec.errors)
    if spec.internal_errors:
        codes.add(500)
    if spec.body is not None:
        codes |= {400, 413}
    if auth_enabled and spec.protected:
        codes.add(401)
    if spec.guarded:
        codes |= {403, 421}
    if spec.write or spec.body is not None:
        codes.add(415)
    for code in sorted(codes):
        responses[str(code)] = _json(ref("Error"), _ERROR_TEXT[code])
    operation: Schema = {
        "operationId": spec.operation_id,
        "summary": spec.summary,
        "responses": responses,
    }
    if spec.parameters:
        operation["parameters"] = list(spec.parameters)
    if spec.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {JSON: {"schema": ref(spec.body)}},
        }
    if not spec.protected:
        operation["security"] = []
    return operation


def openapi_document(*, auth_enabled: bool) -> Schema:
    """The OpenAPI 3.1 document for the REST surface in the given auth mode."""
    paths: Schema = {}
    for spec in TABLE:
        operation = _operation(spec, auth_enabled=auth_enabled)
        paths.setdefault(spec.path, {})[spec.method.lower()] = operation
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
