"""The in-memory :class:`clarion.ports.TokenStore`."""

from __future__ import annotations

from datetime import datetime

import attrs

from clarion.adapters.memory.store import InMemoryRepository
from clarion.adapters.stores.tokens import NewToken, TokenRecords
from clarion.domain.errors import NotFound, Resource
from clarion.domain.host import LOGIN_SESSION, AccessToken, User
from clarion.ports.tokens import CredentialLookup


class InMemoryTokenStore(InMemoryRepository, TokenRecords):
    """Users and personal-access-token records (hashes only) in an :class:`InMemoryStore`."""

    def _insert_user(self, user: User) -> User:
        return self._store.insert(self._store.users, user)

    def get_user(self, user_id: str) -> User | None:
        return self._store.lookup(self._store.users, user_id)

    def list_users(self) -> tuple[User, ...]:
        with self._store.lock:
            users = list(self._store.users.values())
        return tuple(sorted(users, key=lambda user: (user.created_at, user.id)))

    def deactivate_user(self, user_id: str) -> bool:
        with self._store.lock:
            user = self._store.users.get(user_id)
            if user is None:
                raise NotFound(resource=Resource.USER, key=user_id)
            if not user.active:
                return False
            self._store.users[user_id] = attrs.evolve(user, active=False)
            return True

    def _add_token(self, user_id: str, token: NewToken) -> AccessToken:
        with self._store.lock:
            if user_id not in self._store.users:
                raise NotFound(resource=Resource.USER, key=user_id)
            created = token(self._clock.now())
            self._store.tokens[created.id] = created
            return created

    def _add_login_session(
        self, user_id: str, token: NewToken, keep: int
    ) -> tuple[AccessToken, int]:
        with self._store.lock:
            created = self._add_token(user_id, token)
            now = self._clock.now()
            live = sorted(
                (
                    t
                    for t in self._store.tokens.values()
                    if t.user_id == user_id
                    and t.kind == LOGIN_SESSION
                    and t.id != created.id
                    and t.usable_at(now)
                ),
                key=lambda t: (t.created_at, t.id),
                reverse=True,
            )
            ended = live[max(keep - 1, 0) :]
            for other in ended:
                self._store.tokens[other.id] = attrs.evolve(other, revoked_at=now)
            return created, len(ended)

    def find_token(self, token_hash: str) -> AccessToken | None:
        with self._store.lock:
            return next(
                (t for t in self._store.tokens.values() if t.token_hash == token_hash), None
            )

    def get_token(self, token_id: str) -> AccessToken | None:
        return self._store.lookup(self._store.tokens, token_id)

    def list_tokens(self, user_id: str) -> tuple[AccessToken, ...]:
        with self._store.lock:
            if user_id not in self._store.users:
                raise NotFound(resource=Resource.USER, key=user_id)
            owned = (t for t in self._store.tokens.values() if t.user_id == user_id)
            return tuple(sorted(owned, key=lambda t: (t.created_at, t.id)))

    def find_token_and_user(self, token_hash: str) -> tuple[AccessToken, User | None] | None:
        with self._store.lock:
            token = self.find_token(token_hash)
            return None if token is None else (token, self._store.users.get(token.user_id))

    def find_token_with_parent(self, token_hash: str) -> CredentialLookup | None:
        with self._store.lock:
            token = self.find_token(token_hash)
            if token is None:
                return None
            parent = self._store.tokens.get(token.parent_id) if token.parent_id else None
            return CredentialLookup(
                token=token,
                user=self._store.users.get(token.user_id),
                parent=parent,
                parent_user=None if parent is None else self._store.users.get(parent.user_id),
            )

    def revoke_token(self, token_id: str) -> bool:
        with self._store.lock:
            token = self._store.tokens.get(token_id)
            if token is None or token.revoked_at is not None:
                return False
            self._store.tokens[token_id] = attrs.evolve(token, revoked_at=self._clock.now())
            return True

    def touch_token(self, token_id: str, at: datetime) -> None:
        with self._store.lock:
            token = self._store.tokens.get(token_id)
            if token is not None:
                self._store.tokens[token_id] = attrs.evolve(token, last_used_at=at)

    def purge_sessions(self, now: datetime) -> int:
        with self._store.lock:
            ended = [
                t.id
                for t in self._store.tokens.values()
                if t.kind == LOGIN_SESSION and not t.usable_at(now)
            ]
            for token_id in ended:
                del self._store.tokens[token_id]
            return len(ended)
