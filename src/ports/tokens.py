"""Users and stored credentials: personal access tokens and browser login sessions (only
hashes are stored)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

import attrs

from clarion.domain.host import PERSONAL_ACCESS_TOKEN, AccessToken, User


@attrs.frozen
class CredentialLookup:
    """A stored credential as authentication reads it: the record and its user (None when the
    user row is gone), and — for a browser session — the parent token named by ``parent_id``
    with that token's user (None when absent)."""

    token: AccessToken
    user: User | None
    parent: AccessToken | None = None
    parent_user: User | None = None


class UserDirectory(Protocol):
    """Reads users by id; every :class:`TokenStore` is one."""

    def get_user(self, user_id: str) -> User | None: ...


class TokenStore(Protocol):
    """Contract (checked by ``clarion.ports.testing.tokens``): user ids are unique; a token is
    found only by the SHA-256 hex of the full token text; revoked tokens stay findable (so the
    caller can tell why they fail) but ``AccessToken.usable_at`` is False for them. A record's
    ``kind`` (and a session's ``parent_id``) is stored as given and read back unchanged,
    whatever its ``name``."""

    def create_user(self, name: str, *, is_admin: bool = False) -> User: ...

    def get_user(self, user_id: str) -> User | None: ...

    def list_users(self) -> tuple[User, ...]:
        """Every user, deactivated ones included, oldest first (ties by id)."""
        ...

    def deactivate_user(self, user_id: str) -> bool:
        """Mark the user inactive; True when it was active until now.

        Raises:
            NotFound: the user does not exist.
        """
        ...

    def create_token(
        self,
        user_id: str,
        *,
        token_id: str,
        token_hash: str,
        name: str = "",
        expires_at: datetime | None = None,
        kind: str = PERSONAL_ACCESS_TOKEN,
        parent_id: str = "",
    ) -> AccessToken:
        """Store a token record. Raises ``NotFound`` when the user does not exist."""
        ...

    def create_login_session(
        self,
        user_id: str,
        *,
        token_id: str,
        token_hash: str,
        parent_id: str,
        expires_at: datetime | None,
        keep: int,
    ) -> tuple[AccessToken, int]:
        """Store a browser login session (``kind`` ``"session"``) and, in the same
        transaction, end (revoke) the user's oldest live sessions — oldest by ``created_at``,
        then id; live: neither revoked nor expired now — so that at most ``keep`` are live,
        the new one always among them (issue #29 S11). Concurrent calls for one user, in any
        process on one database, take turns (the store serializes them per user), so the
        bound holds. Returns the new record and how many sessions were ended.

        Raises:
            NotFound: the user does not exist.
        """
        ...

    def find_token(self, token_hash: str) -> AccessToken | None: ...

    def get_token(self, token_id: str) -> AccessToken | None:
        """The record with this id, revoked and expired ones included."""
        ...

    def list_tokens(self, user_id: str) -> tuple[AccessToken, ...]:
        """Every record of the user, of every kind, revoked and expired ones included, oldest
        first (ties by id).

        Raises:
            NotFound: the user does not exist.
        """

    def find_token_and_user(self, token_hash: str) -> tuple[AccessToken, User | None] | None:
        """The token with its user (None when the user row is gone) in one read: what
        authenticating a request needs; None when no token has ``token_hash``."""
        ...

    def find_token_with_parent(self, token_hash: str) -> CredentialLookup | None:
        """The token with its user, its parent token (when ``parent_id`` names a stored record)
        and the parent's user, in one read: what resolving a browser session needs; None
        when no token has ``token_hash``."""
        ...

    def revoke_token(self, token_id: str) -> bool:
        """Set ``revoked_at``; True only when a token existed and was not yet revoked."""
        ...

    def touch_token(self, token_id: str, at: datetime) -> None:
        """Record ``last_used_at``; a missing token is ignored."""
        ...

    def purge_sessions(self, now: datetime) -> int:
        """Delete the login-session records that can never authenticate again — expired at
        ``now`` or ended (revoked) — and return how many. Personal access tokens are kept."""
        ...
