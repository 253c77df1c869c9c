"""Who is calling: the authentication middleware and the ``/api/v1/auth`` routes.

Auth disabled: every request carries the synthetic, unscoped identity (spec A4), whatever
credentials it presents. Auth enabled, in this order:

1. ``Authorization: Bearer clarion_pat_…`` — a personal access token. A request that presents
   a bearer token is judged by it alone; a bad one is not rescued by a cookie.
2. The ``clarion_session`` cookie set by ``POST /api/v1/auth/login`` (HttpOnly,
   SameSite=Strict, ``Path=/``). Over https it is ``Secure`` and named
   ``__Host-clarion_session`` (the CSRF cookie ``__Host-clarion_csrf``): the browser then
   refuses such a cookie unless this origin set it over https, so a sibling subdomain or a
   plain-http page cannot plant one. "Over https" is the request's ASGI scheme, which uvicorn
   takes from ``X-Forwarded-Proto`` only for a trusted proxy (``FORWARDED_ALLOW_IPS``). Over
   https only the prefixed names are read, over http only the plain ones.

   **CSRF:** a cookie-authenticated request with an unsafe method (anything but GET, HEAD,
   OPTIONS) must carry the session's CSRF token in the ``X-CSRF-Token`` header, else it gets
   403 ``{"error": "CSRF token missing or invalid"}``.
   The token is returned by the login response and by ``GET /api/v1/auth/me``, and is also
   set in the readable ``clarion_csrf`` cookie (double submit); it is derived from the
   HttpOnly session value, so a cross-site page can neither read nor forge it. Login itself,
   like every write, accepts only ``Content-Type: application/json``
   (:mod:`clarion.adapters.http_guard`), which a cross-site form cannot send.

Only paths under ``/api/`` are authenticated, each request once; those (except login and
logout) need an identity: without one the answer is 401 ``{"error": "authentication required"}``
with ``WWW-Authenticate: Bearer``. Every other path (``/healthz``, ``/openapi.json``, the web
inbox and its assets) needs none and is passed through untouched; the MCP endpoints
authenticate their own requests.

The answer-link page (``/answer/<token>``, :data:`clarion.adapters.http_guard.FORM_PATHS`) is
outside ``/api/``: its credential is the signed token in its path, so it never needs an
identity and never gets a CSRF check (the unguessable token in the URL is what a cross-site
form cannot know). The caller is still identified there when it presents a credential —
a link made for an MCP client's URL-mode elicitation (issue #31) must be opened by the person
it was made for, signed in, as the MCP specification requires of URL mode.

The identity is published through one channel, :func:`clarion.app.usecases.auth.current_identity`
(``None``: nobody authenticated), bound for the rest of the request. The ``clarion.auth`` scope
key (an :class:`AuthContext`: how the caller authenticated, its CSRF token and credential) is
this module's own, read through :func:`auth_context` by the routes of this package.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Collection
from typing import Any, Final, Literal

import attrs
import structlog
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from clarion.adapters import wire
from clarion.adapters.rest.bodies import read_model
from clarion.adapters.rest.errors import (
    CSRF_FAILED,
    INTERNAL_ERROR,
    INVALID_TOKEN,
    failure,
    unauthenticated,
)
from clarion.adapters.rest.routes import Endpoint
from clarion.adapters.revocation import RevocationWatch
from clarion.adapters.wire import models
from clarion.app.usecases.auth import (
    Authentication,
    LoginSession,
    LoginThrottled,
    bearer_credential,
    hash_credential,
    identity_bound,
)
from clarion.domain.errors import failure_fields
from clarion.domain.model import Identity
from clarion.domain.resolved_by import Surface
from clarion.ports.threads import Offload

log = structlog.get_logger(__name__)

SESSION_COOKIE: Final = "clarion_session"
CSRF_COOKIE: Final = "clarion_csrf"
SECURE_PREFIX: Final = "__Host-"
CSRF_HEADER: Final = "X-CSRF-Token"
AUTH_SCOPE_KEY: Final = "clarion.auth"
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
PROTECTED_PREFIX: Final = "/api/"
# Identified when a credential comes, never refused and never CSRF-checked (see the module).
OPTIONAL_PREFIXES: Final = ("/answer/",)
LOGIN_PATH: Final = "/api/v1/auth/login"
LOGOUT_PATH: Final = "/api/v1/auth/logout"
ME_PATH: Final = "/api/v1/auth/me"

Via = Literal["disabled", "token", "session", "none"]


@attrs.frozen
class Credential:
    """The credential a request authenticated with: ``key`` is its digest (never the secret),
    ``still_valid`` re-checks it (False once revoked, logged out or expired; blocking, run it
    in a worker thread). Long-lived responses such as event streams use it."""

    key: str
    still_valid: Callable[[], bool] = attrs.field(eq=False, repr=False)


@attrs.frozen
class AuthContext:
    """The outcome of authentication for one request."""

    identity: Identity | None
    via: Via
    csrf_token: str = attrs.field(default="", repr=False)
    credential: Credential | None = None


def auth_context(connection: HTTPConnection) -> AuthContext:
    """The :class:`AuthContext` the middleware attached (none attached: nobody)."""
    found = connection.scope.get(AUTH_SCOPE_KEY)
    return found if isinstance(found, AuthContext) else AuthContext(identity=None, via="none")


def require_identity(connection: HTTPConnection) -> Identity:
    """The caller's identity on a protected route (the middleware guarantees one)."""
    identity = auth_context(connection).identity
    if identity is None:  # only reachable when the middleware is not installed
        raise RuntimeError("no identity: AuthMiddleware is not installed")
    return identity


EVENTS_PATH: Final = "/api/v1/events"  # the event stream (clarion.adapters.rest.events)
SURFACE_HEADER: Final = "X-Clarion-Surface"
_LABELLED_SURFACES: Final = frozenset({Surface.CLI.value, Surface.INBOX.value})


def resolving_surface(connection: HTTPConnection) -> Surface:
    """The surface a REST respond is recorded with (issue #20; docs/observability.md).

    A request authenticated by the inbox's cookie session is the inbox — a fact of the
    credential. Otherwise the caller may label itself with ``X-Clarion-Surface: cli`` (the
    CLI's client) or ``inbox`` (the inbox with auth disabled, where there is no cookie): a
    self-declared label for the audit record only, never used for any decision. Any other
    value, or none, is plain REST."""
    if auth_context(connection).via == "session":
        return Surface.INBOX
    label = connection.headers.get(SURFACE_HEADER, "").strip().lower()
    return Surface(label) if label in _LABELLED_SURFACES else Surface.REST


def _is_https(connection: HTTPConnection) -> bool:
    return connection.url.scheme in ("https", "wss")


def cookie_name(base: str, connection: HTTPConnection) -> str:
    """``base`` over http, ``__Host-`` + ``base`` over https (see the module docstring)."""
    return SECURE_PREFIX + base if _is_https(connection) else base


class AuthMiddleware:
    """Pure ASGI middleware attaching the caller's identity (see the module docstring).

    Installing it twice is harmless: an inner instance keeps what an outer one decided.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        enabled: bool,
        authentication: Authentication | None,
        offload: Offload,
        public_paths: Collection[str] = (LOGIN_PATH, LOGOUT_PATH),
        identified_paths: Collection[str] = (),
        revocation: RevocationWatch | None = None,
    ) -> None:
        if enabled and authentication is None:
            raise ValueError("auth enabled needs an Authentication")
        self.app = app
        self._enabled = enabled
        self._authentication = authentication
        self._offload = offload
        self._public = frozenset(public_paths)
        # #29 S8: reads that may run on (a /wait) end when their credential stops working;
        # writes are short and were checked on arrival; the event stream has its own watch.
        self._revocation = revocation if revocation is not None else RevocationWatch()
        # Outside /api/ but served to an identity (e.g. /metrics, admin only): authenticated
        # here like /api/, and the route itself refuses a caller without one.
        self._identified = frozenset(identified_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = _route_path(scope) if scope["type"] == "http" else ""
        optional = path.startswith(OPTIONAL_PREFIXES)
        needs_identity = path.startswith(PROTECTED_PREFIX) or path in self._identified
        if not (needs_identity or optional) or AUTH_SCOPE_KEY in scope:
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        if not self._enabled:
            context = AuthContext(identity=Identity.synthetic_admin(), via="disabled")
        else:
            try:
                context = await self._authenticate(connection)
            except Exception as exc:  # noqa: BLE001 - logged without driver text
                log.error("authentication_failed", path=scope["path"], **failure_fields(exc))
                await failure(500, INTERNAL_ERROR)(scope, receive, send)
                return
            method = scope.get("method", "GET")
            # Login ignores the cookie it may arrive with, so it is the one exempt write.
            if (
                context.via == "session"
                and method not in SAFE_METHODS
                and path != LOGIN_PATH
                and not optional
            ):
                presented = connection.headers.get(CSRF_HEADER, "")
                if not hmac.compare_digest(presented.encode(), context.csrf_token.encode()):
                    await failure(403, CSRF_FAILED)(scope, receive, send)
                    return
            if context.identity is None and self._protected(path):
                await unauthenticated()(scope, receive, send)
                return
        scope[AUTH_SCOPE_KEY] = context
        credential = context.credential
        with identity_bound(context.identity):
            # The event stream watches its own credential (and ends itself cleanly, between
            # events); a second watch here would cut it mid-frame.
            if credential is None or scope.get("method") != "GET" or path == EVENTS_PATH:
                await self.app(scope, receive, send)
                return

            async def check() -> bool:
                return await self._offload(credential.still_valid)

            await self._revocation.serve(credential.key, check, self.app, scope, receive, send)

    def _protected(self, path: str) -> bool:
        """``path`` is relative to where Clarion is mounted (``root_path`` removed)."""
        return path.startswith(PROTECTED_PREFIX) and path not in self._public

    async def _authenticate(self, connection: HTTPConnection) -> AuthContext:
        authentication = self._authentication
        assert authentication is not None
        bearer = bearer_credential(connection.headers.get("authorization"))
        if bearer is not None:
            identity = await self._offload(authentication.resolve_bearer, bearer)
            if identity is None:
                return AuthContext(identity=None, via="none")
            token = Credential(
                key=hash_credential(bearer),
                still_valid=lambda: authentication.resolve_bearer(bearer) is not None,
            )
            return AuthContext(identity=identity, via="token", credential=token)
        cookie = connection.cookies.get(cookie_name(SESSION_COOKIE, connection))
        if cookie:
            session = await self._offload(authentication.resolve_session, cookie)
            if session is not None:
                browser = Credential(
                    key=hash_credential(cookie),
                    still_valid=lambda: authentication.resolve_session(cookie) is not None,
                )
                return AuthContext(
                    identity=session.identity,
                    via="session",
                    csrf_token=session.csrf_token,
                    credential=browser,
                )
        return AuthContext(identity=None, via="none")


# --- routes ------------------------------------------------------------------------------


def _me(context: AuthContext, *, auth_enabled: bool) -> models.Me:
    identity = context.identity
    assert identity is not None
    return models.Me(
        user_id=identity.user_id or "",
        display_name=identity.display_name,
        is_admin=identity.is_admin,
        auth_enabled=auth_enabled,
        authenticated_by=context.via,
        csrf_token=context.csrf_token,
    )


def _logged_in(session: LoginSession, *, auth_enabled: bool) -> models.LoggedIn:
    """``POST /auth/login``'s body: who the new browser session is, and its CSRF token."""
    context = AuthContext(identity=session.identity, via="session", csrf_token=session.csrf_token)
    me = _me(context, auth_enabled=auth_enabled)
    return models.LoggedIn(
        user_id=me.user_id,
        display_name=me.display_name,
        is_admin=me.is_admin,
        auth_enabled=me.auth_enabled,
        authenticated_by="session",
        csrf_token=me.csrf_token,
        expires_at=session.expires_at,
    )


def _session_cookies(request: Request) -> tuple[tuple[str, dict[str, Any]], ...]:
    """The session cookie (HttpOnly) and the CSRF cookie the inbox reads, each with the
    attributes that set it — and that must delete it again, or the browser keeps it."""
    shared: dict[str, Any] = {"path": "/", "secure": _is_https(request), "samesite": "strict"}
    return (
        (cookie_name(SESSION_COOKIE, request), {**shared, "httponly": True}),
        (cookie_name(CSRF_COOKIE, request), shared),
    )


def _set_session_cookies(response: Response, request: Request, session: LoginSession) -> None:
    """Both cookies, strict and expiring with the session."""
    values = (session.cookie, session.csrf_token)
    for (name, attributes), value in zip(_session_cookies(request), values, strict=True):
        response.set_cookie(name, value, expires=session.expires_at, **attributes)


def _delete_session_cookies(response: Response, request: Request) -> None:
    """Both cookies :func:`_set_session_cookies` sets, deleted with the same attributes."""
    for name, attributes in _session_cookies(request):
        response.delete_cookie(name, **attributes)


def auth_routes(
    *, auth_enabled: bool, authentication: Authentication | None, offload: Offload
) -> dict[str, Endpoint]:
    """``POST /auth/login``, ``POST /auth/logout`` and ``GET /auth/me``."""

    async def login(request: Request) -> Response:
        # Login CSRF: HttpGuard admits only application/json writes, which a cross-site form
        # cannot send without a preflight.
        body = await read_model(request, models.LoginIn)
        client = request.client.host if request.client is not None else ""
        try:
            session = (
                await offload(authentication.login, body.token, client=client)
                if authentication is not None
                else None
            )
        except LoginThrottled as refused:
            log.warning("login_throttled", client=client, retry_after_s=refused.retry_after_s)
            return failure(429, str(refused), headers={"Retry-After": str(refused.retry_after_s)})
        if session is None:
            return failure(401, INVALID_TOKEN, headers={"WWW-Authenticate": "Bearer"})
        response = JSONResponse(wire.unstructure(_logged_in(session, auth_enabled=auth_enabled)))
        _set_session_cookies(response, request, session)
        return response

    async def logout(request: Request) -> Response:
        cookie = request.cookies.get(cookie_name(SESSION_COOKIE, request))
        if cookie and authentication is not None:
            await offload(authentication.logout, cookie)
        response = JSONResponse(wire.unstructure(models.Success(True)))
        _delete_session_cookies(response, request)
        return response

    async def me(request: Request) -> Response:
        return JSONResponse(wire.unstructure(_me(auth_context(request), auth_enabled=auth_enabled)))

    return {
        "login": login,
        "logout": logout,
        "me": me,
    }


def _route_path(scope: Scope) -> str:
    """The request path below ``root_path``, so rules hold when a host mounts Clarion under a
    prefix (``/clarion/api/v1/...`` is protected like ``/api/v1/...``)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path
