"""What both token stores share: a new user, a new access token and a new login session."""

from __future__ import annotations

import abc
from collections.abc import Callable
from datetime import datetime

from clarion.domain.host import LOGIN_SESSION, PERSONAL_ACCESS_TOKEN, AccessToken, User
from clarion.ports.system import Clock, IdGenerator

NewToken = Callable[[datetime], AccessToken]
"""A new token, once the time it is created at is read (inside the store's write)."""


def _token_at(
    user_id: str,
    token_id: str,
    token_hash: str,
    name: str,
    expires_at: datetime | None,
    kind: str,
    parent_id: str,
) -> NewToken:
    def token(now: datetime) -> AccessToken:
        return AccessToken(
            id=token_id,
            user_id=user_id,
            name=name,
            token_hash=token_hash,
            created_at=now,
            expires_at=expires_at,
            kind=kind,
            parent_id=parent_id,
        )

    return token


class TokenRecords(abc.ABC):
    """The storage-independent half of a :class:`~clarion.ports.tokens.TokenStore` (the
    subclass supplies ``_clock`` and ``_ids``)."""

    _clock: Clock
    _ids: IdGenerator

    def create_user(self, name: str, *, is_admin: bool = False) -> User:
        user = User(
            id=self._ids.new_id(), name=name, is_admin=is_admin, created_at=self._clock.now()
        )
        return self._insert_user(user)

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
        token = _token_at(user_id, token_id, token_hash, name, expires_at, kind, parent_id)
        return self._add_token(user_id, token)

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
        token = _token_at(user_id, token_id, token_hash, "", expires_at, LOGIN_SESSION, parent_id)
        return self._add_login_session(user_id, token, keep)

    @abc.abstractmethod
    def _insert_user(self, user: User) -> User:
        """Keep the new ``user``; returns it as stored."""

    @abc.abstractmethod
    def _add_token(self, user_id: str, token: NewToken) -> AccessToken:
        """In one step: raise ``NotFound`` unless user ``user_id`` exists, then keep the
        token ``token`` makes at the clock's now; returns it."""

    @abc.abstractmethod
    def _add_login_session(
        self, user_id: str, token: NewToken, keep: int
    ) -> tuple[AccessToken, int]:
        """:meth:`_add_token` for a login session, and in the same step revoke the user's
        other live login sessions but the newest ``keep - 1``; returns the session and how
        many were revoked."""
