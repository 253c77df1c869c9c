"""Users and personal access tokens (only hashes are stored)."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from clarion.domain.host import AccessToken, User


class TokenStore(Protocol):
    """Contract (checked by ``clarion.ports.testing.tokens``): user ids are unique; a token is
    found only by the SHA-256 hex of the full token text; revoked tokens stay findable (so the
    caller can tell why they fail) but ``AccessToken.usable_at`` is False for them."""

    def create_user(self, name: str, *, is_admin: bool = False) -> User: ...

    def get_user(self, user_id: str) -> User | None: ...

    def create_token(
        self,
        user_id: str,
        *,
        token_id: str,
        token_hash: str,
        name: str = "",
        expires_at: datetime | None = None,
    ) -> AccessToken:
        """Store a token record. Raises ``NotFound`` when the user does not exist."""
        ...

    def find_token(self, token_hash: str) -> AccessToken | None: ...

    def find_token_and_user(self, token_hash: str) -> tuple[AccessToken, User | None] | None:
        """The token with its user (None when the user row is gone) in one read: what
        authenticating a request needs; None when no token has ``token_hash``."""
        ...

    def revoke_token(self, token_id: str) -> bool:
        """Set ``revoked_at``; True only when a token existed and was not yet revoked."""
        ...

    def touch_token(self, token_id: str, at: datetime) -> None:
        """Record ``last_used_at``; a missing token is ignored."""
        ...
