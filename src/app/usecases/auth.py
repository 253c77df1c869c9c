"""Authentication: users, personal access tokens, browser login sessions, and the identity of
the request being served.

Credentials (interfaces.md "Identity and authorization"):

- A personal access token is ``clarion_pat_<8 hex>_<secret>``. It is shown once, when issued;
  the :class:`~clarion.ports.TokenStore` keeps only the SHA-256 hex of the full text. A token
  authenticates while it is neither expired nor revoked and its user is active; each use
  records ``last_used_at`` (at most once per ``touch_interval``).
- A browser login session is ``clarion_ses_<8 hex>_<secret>``, created by :meth:`login` from a
  valid personal access token and carried in an HttpOnly cookie. Sessions are stored through
  the same ``TokenStore`` (hash only), so they survive restarts and are shared by every process
  on one database. A session record has ``kind`` ``"session"`` and names its parent token by
  ``parent_id`` (a token's own name never matters): it expires after ``session_ttl`` (never
  later than its parent token), ends on :meth:`logout`, and stops working the moment its parent
  token is revoked or expires. Ended and expired session records are deleted by
  :meth:`purge_sessions` (at every login, and periodically by the served application). A user
  has at most ``max_sessions`` live sessions: a login beyond that ends the user's oldest ones
  (issue #29 S11; the store keeps the bound across processes). The
  kinds and the two prefixes keep the two channels apart: a session value is never accepted as
  a bearer token, nor a token as a cookie.
- Failed logins are throttled (:class:`LoginThrottle`, issue #29 S11): after
  ``max_failures`` failures within ``window_s`` from one client address, or with one token id
  (the 8 hex digits after ``clarion_pat_``), further logins from that address or with that
  token id are refused (:class:`LoginThrottled`, with the seconds to wait) — the token is not
  even checked — until the oldest of those failures is ``window_s`` old. The count is kept
  per process.
- Deactivating a user (:meth:`deactivate_user`) stops all of their credentials at once: tokens,
  browser sessions, and the agent tokens of sessions in workspaces they own (checked by
  :meth:`clarion.app.usecases.host.HostOperations.authenticate_agent`).
- Cookie-authenticated writes need a CSRF token (:meth:`csrf_token`): the SHA-256 of the session
  value under a fixed label. The browser learns it from the login response (and ``/auth/me``),
  never from the HttpOnly cookie, so a cross-site page can neither read nor compute it.

The identity of the request being served lives in a context variable (:func:`current_identity`),
the one channel that publishes it: REST's middleware binds it for ``/api/`` requests and each MCP
endpoint for its own requests, after authenticating each request once. ``None`` there means
*nobody authenticated* — which is not the same thing as :meth:`Identity.internal`, the unscoped
identity of in-process callers.

Every surface reads a bearer credential with :func:`bearer_credential` and digests any
credential (token, session value, agent token) with :func:`hash_credential`.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Final

import attrs

from clarion.domain.errors import NotFound, Resource, ValidationError
from clarion.domain.host import LOGIN_SESSION, PERSONAL_ACCESS_TOKEN, AccessToken, User
from clarion.domain.model import Identity
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.tokens import TokenStore

TOKEN_PREFIX: Final = "clarion_pat_"
SESSION_PREFIX: Final = "clarion_ses_"
_CSRF_LABEL: Final = b"clarion-csrf-v1:"
_SECRET_BYTES: Final = 32
# <prefix><8 hex>_<url-safe base64 secret>; the secret alphabet itself contains "_" and "-".
_CREDENTIAL = re.compile(r"[0-9a-f]{8}_[A-Za-z0-9_-]{32,128}")

_CURRENT_IDENTITY: ContextVar[Identity | None] = ContextVar("clarion_identity", default=None)


def current_identity() -> Identity | None:
    """The identity of the request being served; None when nobody authenticated."""
    return _CURRENT_IDENTITY.get()


@contextmanager
def identity_bound(identity: Identity | None) -> Iterator[None]:
    """Bind ``identity`` as :func:`current_identity` for the duration of the block."""
    token = _CURRENT_IDENTITY.set(identity)
    try:
        yield
    finally:
        _CURRENT_IDENTITY.reset(token)


def hash_credential(credential: str) -> str:
    """The SHA-256 hex digest stored in place of a token, session value or agent token."""
    return hashlib.sha256(credential.encode("utf-8")).hexdigest()


def bearer_credential(authorization: str | None) -> str | None:
    """The credential of an ``Authorization`` header value: None without the header, "" when it
    names another scheme than ``Bearer`` (case-insensitive) or no credential."""
    if authorization is None:
        return None
    scheme, _, credential = authorization.partition(" ")
    return credential.strip() if scheme.lower() == "bearer" else ""


def _well_formed(credential: str, prefix: str) -> bool:
    return credential.startswith(prefix) and (
        _CREDENTIAL.fullmatch(credential[len(prefix) :]) is not None
    )


DEFAULT_MAX_LOGIN_SESSIONS: Final = 10
DEFAULT_LOGIN_FAILURES: Final = 5
DEFAULT_LOGIN_FAILURE_WINDOW_S: Final = 60.0
# How many client addresses and token ids the throttle remembers at most (the least recently
# failed are forgotten first), so random addresses or token ids cannot grow it without bound.
MAX_THROTTLED_KEYS: Final = 10_000
_TOKEN_ID = re.compile(r"[0-9a-f]{8}")


class LoginThrottled(Exception):
    """Too many failed logins from this client or with this token id: wait ``retry_after_s``
    seconds (a whole number, at least 1)."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"too many failed logins: retry after {retry_after_s} s")
        self.retry_after_s = retry_after_s


def login_keys(token: str, client: str) -> tuple[str, ...]:
    """What a login attempt counts against: its client address (when known) and the token id
    the presented text claims (when it has one)."""
    keys = [f"client:{client}"] if client else []
    token_id = token[len(TOKEN_PREFIX) : len(TOKEN_PREFIX) + 8]
    if token.startswith(TOKEN_PREFIX) and _TOKEN_ID.fullmatch(token_id):
        keys.append(f"token:{token_id}")
    return tuple(keys)


class LoginThrottle:
    """Failed logins per key within a sliding window (see the module docstring); thread-safe,
    per process. ``clock`` is a monotonic clock in seconds."""

    def __init__(
        self,
        *,
        max_failures: int = DEFAULT_LOGIN_FAILURES,
        window_s: float = DEFAULT_LOGIN_FAILURE_WINDOW_S,
        max_keys: int = MAX_THROTTLED_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_failures < 1 or not window_s > 0 or max_keys < 1:
            raise ValueError("a login throttle needs positive bounds")
        self._max_failures = max_failures
        self._window_s = window_s
        self._max_keys = max_keys
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, keys: tuple[str, ...]) -> None:
        """Refuse an attempt while any of ``keys`` has ``max_failures`` recent failures.

        Raises:
            LoginThrottled: with the seconds until the attempt would be admitted.
        """
        now = self._clock()
        wait = 0.0
        with self._lock:
            for key in keys:
                recent = self._recent(key, now)
                if recent is not None and len(recent) >= self._max_failures:
                    wait = max(wait, recent[0] + self._window_s - now)
        if wait > 0:
            raise LoginThrottled(max(1, math.ceil(wait)))

    def failed(self, keys: tuple[str, ...]) -> None:
        """Count a failed attempt against each of ``keys``."""
        now = self._clock()
        with self._lock:
            for key in keys:
                recent = self._recent(key, now)
                if recent is None:
                    recent = self._failures[key] = deque(maxlen=self._max_failures)
                recent.append(now)
                self._failures.move_to_end(key)
            while len(self._failures) > self._max_keys:
                self._failures.popitem(last=False)

    def _recent(self, key: str, now: float) -> deque[float] | None:
        recent = self._failures.get(key)
        if recent is None:
            return None
        while recent and recent[0] <= now - self._window_s:
            recent.popleft()
        if not recent:
            del self._failures[key]
            return None
        return recent


@attrs.frozen
class IssuedToken:
    """A freshly issued personal access token: ``token`` is the only time its text exists."""

    token: str = attrs.field(repr=False)
    record: AccessToken


@attrs.frozen
class LoginSession:
    """A browser session created by :meth:`Authentication.login`."""

    cookie: str = attrs.field(repr=False)
    csrf_token: str = attrs.field(repr=False)
    identity: Identity
    expires_at: datetime


@attrs.frozen
class SessionIdentity:
    """Who a valid session cookie belongs to, and the CSRF token its writes must carry."""

    identity: Identity
    csrf_token: str = attrs.field(repr=False)


class Authentication:
    """Issues and checks credentials against a :class:`TokenStore`.

    Every method is synchronous (the store may be a database); call them from a worker thread
    in async code.
    """

    def __init__(
        self,
        tokens: TokenStore,
        clock: Clock,
        ids: IdGenerator,
        *,
        session_ttl: timedelta = timedelta(hours=12),
        touch_interval: timedelta = timedelta(minutes=1),
        max_sessions: int = DEFAULT_MAX_LOGIN_SESSIONS,
        throttle: LoginThrottle | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        self._tokens = tokens
        self._clock = clock
        self._ids = ids
        self._session_ttl = session_ttl
        self._touch_interval = touch_interval
        self._max_sessions = max_sessions
        self._throttle = throttle

    # --- users and tokens ----------------------------------------------------------------

    def create_user(self, name: str, *, is_admin: bool = False) -> User:
        """Create a user; returns its record (the id is what tokens are issued to).

        A name is how people tell users apart (the inbox shows who answered by name), so no
        two active users share one, compared without case and surrounding blanks (#30); a
        deactivated user's name may be taken again. The store does not enforce it (older
        databases may hold duplicates): two concurrent creations can still both succeed.

        Raises:
            ValidationError: the name is blank, or an active user has it (``field`` "name";
                the message names that user's id).
        """
        name = name.strip()
        if not name:
            raise ValidationError("a user needs a name", field="name")
        wanted = name.casefold()
        for user in self._tokens.list_users():
            if user.active and user.name.strip().casefold() == wanted:
                raise ValidationError(
                    f"an active user named {user.name!r} exists already: {user.id} (choose "
                    "another name, or deactivate that user first)",
                    field="name",
                )
        return self._tokens.create_user(name, is_admin=is_admin)

    def list_users(self) -> tuple[User, ...]:
        """Every user, deactivated ones included, oldest first."""
        return self._tokens.list_users()

    def issue_token(
        self, user_id: str, *, name: str = "", expires_at: datetime | None = None
    ) -> IssuedToken:
        """Issue a personal access token for ``user_id``; its text is returned only here.

        Raises:
            NotFound: the user does not exist (``key``: the id).
            ValidationError: the user is deactivated, so the token could never authenticate
                (``field`` "user_id").
        """
        user = self._tokens.get_user(user_id)
        if user is None:
            raise NotFound(resource=Resource.USER, key=user_id)
        if not user.active:
            raise ValidationError(
                f"user {user_id} ({user.name}) is deactivated: a token for them would never "
                "authenticate",
                field="user_id",
            )
        token = f"{TOKEN_PREFIX}{secrets.token_hex(4)}_{secrets.token_urlsafe(_SECRET_BYTES)}"
        record = self._tokens.create_token(
            user_id,
            token_id=self._ids.new_id(),
            token_hash=hash_credential(token),
            name=name,
            expires_at=expires_at,
        )
        return IssuedToken(token=token, record=record)

    def get_user(self, user_id: str) -> User | None:
        """The user with this id, active or not."""
        return self._tokens.get_user(user_id)

    def deactivate_user(self, user_id: str) -> bool:
        """Deactivate a user: from now on none of their tokens, browser sessions or agent
        tokens authenticate. True when the user was active until now.

        Raises:
            NotFound: the user does not exist.
        """
        return self._tokens.deactivate_user(user_id)

    def list_tokens(self, user_id: str) -> tuple[AccessToken, ...]:
        """Every token and browser session of a user (revoked and expired ones included,
        until purged), oldest first.

        Raises:
            NotFound: the user does not exist.
        """
        return self._tokens.list_tokens(user_id)

    def get_token(self, token_id: str) -> AccessToken | None:
        """The stored record of a token or browser session, by id."""
        return self._tokens.get_token(token_id)

    def revoke_token(self, token_id: str) -> bool:
        """Revoke a token (and with it every browser session created from it), or end one
        browser session. True only when a live record was revoked now."""
        return self._tokens.revoke_token(token_id)

    def resolve_bearer(self, token: str) -> Identity | None:
        """The identity a personal access token stands for; None when it is malformed,
        unknown, expired, revoked, or its user is inactive."""
        if not _well_formed(token, TOKEN_PREFIX):
            return None
        found = self._usable(self._tokens.find_token_and_user(hash_credential(token)))
        if found is None or found[0].kind != PERSONAL_ACCESS_TOKEN:
            return None
        return found[1]

    # --- browser sessions ----------------------------------------------------------------

    def login(self, token: str, *, client: str = "") -> LoginSession | None:
        """Start a browser session from a personal access token; None when the token does
        not authenticate. The user's oldest sessions beyond ``max_sessions`` end. ``client``
        is the caller's address, for the throttle of failed logins.

        Raises:
            LoginThrottled: too many recent failures from ``client`` or with this token id;
                the token was not checked.
        """
        keys = login_keys(token, client)
        if self._throttle is not None:
            self._throttle.check(keys)
        found = (
            self._usable(self._tokens.find_token_and_user(hash_credential(token)))
            if _well_formed(token, TOKEN_PREFIX)
            else None
        )
        if found is None or found[0].kind != PERSONAL_ACCESS_TOKEN:
            if self._throttle is not None:
                self._throttle.failed(keys)
            return None
        parent, identity = found
        self.purge_sessions()
        expires_at = self._clock.now() + self._session_ttl
        if parent.expires_at is not None:
            expires_at = min(expires_at, parent.expires_at)
        cookie = f"{SESSION_PREFIX}{secrets.token_hex(4)}_{secrets.token_urlsafe(_SECRET_BYTES)}"
        self._tokens.create_login_session(
            parent.user_id,
            token_id=self._ids.new_id(),
            token_hash=hash_credential(cookie),
            parent_id=parent.id,
            expires_at=expires_at,
            keep=self._max_sessions,
        )
        return LoginSession(
            cookie=cookie,
            csrf_token=self.csrf_token(cookie),
            identity=identity,
            expires_at=expires_at,
        )

    def resolve_session(self, cookie: str) -> SessionIdentity | None:
        """Who a session cookie belongs to; None when it is malformed, unknown, expired,
        logged out, or its parent token no longer authenticates."""
        if not _well_formed(cookie, SESSION_PREFIX):
            return None
        lookup = self._tokens.find_token_with_parent(hash_credential(cookie))  # one read
        if lookup is None:
            return None
        found = self._usable((lookup.token, lookup.user))
        if found is None or found[0].kind != LOGIN_SESSION:
            return None
        parent = lookup.parent
        if parent is None or self._usable((parent, lookup.parent_user), touch=False) is None:
            return None
        return SessionIdentity(identity=found[1], csrf_token=self.csrf_token(cookie))

    def logout(self, cookie: str) -> bool:
        """End a browser session; True when a live session was ended."""
        if not _well_formed(cookie, SESSION_PREFIX):
            return False
        record = self._tokens.find_token(hash_credential(cookie))
        if record is None or record.kind != LOGIN_SESSION:
            return False
        return self._tokens.revoke_token(record.id)

    def purge_sessions(self) -> int:
        """Delete the browser-session records that can never authenticate again (expired or
        logged out); returns how many. Personal access tokens are never deleted."""
        return self._tokens.purge_sessions(self._clock.now())

    @staticmethod
    def csrf_token(cookie: str) -> str:
        """The CSRF token bound to a session value (derived, so nothing more is stored)."""
        return hashlib.sha256(_CSRF_LABEL + cookie.encode("utf-8")).hexdigest()

    @staticmethod
    def csrf_matches(cookie: str, presented: str) -> bool:
        """Constant-time check of a presented CSRF token against the session's."""
        expected = Authentication.csrf_token(cookie)
        return hmac.compare_digest(expected.encode("ascii"), presented.encode("utf-8"))

    # --- shared --------------------------------------------------------------------------

    def _usable(
        self, found: tuple[AccessToken, User | None] | None, *, touch: bool = True
    ) -> tuple[AccessToken, Identity] | None:
        """A looked-up token and its user (one read: ``find_token_and_user``), when the token
        authenticates now and its user is active."""
        now = self._clock.now()
        if found is None or not found[0].usable_at(now):
            return None
        record, user = found
        if user is None or not user.active:
            return None
        if touch and (
            record.last_used_at is None or now - record.last_used_at >= self._touch_interval
        ):
            self._tokens.touch_token(record.id, now)
        return record, Identity.user(user.id, is_admin=user.is_admin, display_name=user.name)


__all__ = [
    "SESSION_PREFIX",
    "TOKEN_PREFIX",
    "Authentication",
    "IssuedToken",
    "LoginSession",
    "LoginThrottle",
    "LoginThrottled",
    "SessionIdentity",
    "bearer_credential",
    "current_identity",
    "hash_credential",
    "identity_bound",
]
