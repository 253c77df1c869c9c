"""The SQL :class:`clarion.ports.TokenStore`: users, personal access tokens and browser login
sessions (SHA-256 hashes only; the credential text is never stored)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from clarion.adapters.sql.engine import SqlStore, read_one, read_transaction
from clarion.adapters.sql.rows import from_row, insert_record, row_values
from clarion.adapters.sql.schema import access_tokens, users
from clarion.adapters.stores.tokens import NewToken, TokenRecords
from clarion.domain.errors import NotFound, Resource
from clarion.domain.host import LOGIN_SESSION, AccessToken, User
from clarion.ports.tokens import CredentialLookup


def _user(row: Mapping[Any, Any]) -> User:
    return from_row(User, row, is_admin=bool(row["is_admin"]), active=bool(row["active"]))


def _token(row: Mapping[Any, Any]) -> AccessToken:
    return from_row(AccessToken, row)


_TOKEN_FIELDS = tuple(column.name for column in access_tokens.c)
_USER_FIELDS = ("id", "name", "is_admin", "active", "created_at")


def _user_columns(user: sa.FromClause, prefix: str) -> list[Any]:
    return [user.c[name].label(f"{prefix}{name}") for name in _USER_FIELDS]


def _prefixed_user(row: Mapping[Any, Any], prefix: str) -> User | None:
    """The user read under ``prefix`` by an outer join; None when the join found none."""
    if row[f"{prefix}id"] is None:
        return None
    return _user({name: row[f"{prefix}{name}"] for name in _USER_FIELDS})


@cache
def _token_and_user() -> sa.Select[Any]:
    owner = users.alias("owner")
    return (
        sa.select(access_tokens, *_user_columns(owner, "owner_"))
        .select_from(access_tokens.outerjoin(owner, owner.c.id == access_tokens.c.user_id))
        .where(access_tokens.c.token_hash == sa.bindparam("token_hash"))
    )


@cache
def _token_with_parent() -> sa.Select[Any]:
    """The token, its user, its parent token and the parent's user: one statement, every
    join a primary-key probe."""
    owner = users.alias("owner")
    parent = access_tokens.alias("parent_token")
    parent_owner = users.alias("parent_owner")
    return (
        sa.select(
            access_tokens,
            *_user_columns(owner, "owner_"),
            *[parent.c[name].label(f"parent_token_{name}") for name in _TOKEN_FIELDS],
            *_user_columns(parent_owner, "parent_owner_"),
        )
        .select_from(
            access_tokens.outerjoin(owner, owner.c.id == access_tokens.c.user_id)
            .outerjoin(parent, parent.c.id == access_tokens.c.parent_id)
            .outerjoin(parent_owner, parent_owner.c.id == parent.c.user_id)
        )
        .where(access_tokens.c.token_hash == sa.bindparam("token_hash"))
    )


class SqlTokenStore(SqlStore, TokenRecords):
    """See the module docstring; user ids from ``ids``, timestamps from ``clock``."""

    def _insert_user(self, user: User) -> User:
        return insert_record(self._writes, users, user)

    def get_user(self, user_id: str) -> User | None:
        with read_transaction(self._engine) as connection:
            row = connection.execute(sa.select(users).where(users.c.id == user_id)).mappings()
            found = row.first()
        return _user(found) if found is not None else None

    def list_users(self) -> tuple[User, ...]:
        with read_transaction(self._engine) as connection:
            rows = connection.execute(
                sa.select(users).order_by(users.c.created_at, users.c.id)
            ).mappings()
            return tuple(_user(row) for row in rows)

    def deactivate_user(self, user_id: str) -> bool:
        with self._writes.begin() as connection:
            found = connection.execute(
                sa.select(users.c.active).where(users.c.id == user_id)
            ).first()
            if found is None:
                raise NotFound(resource=Resource.USER, key=user_id)
            result = connection.execute(
                sa.update(users)
                .where(users.c.id == user_id, users.c.active == sa.true())
                .values(active=False)
            )
        return result.rowcount == 1

    def _add_token(self, user_id: str, token: NewToken) -> AccessToken:
        with self._writes.begin() as connection:
            exists = connection.execute(sa.select(users.c.id).where(users.c.id == user_id))
            if exists.first() is None:
                raise NotFound(resource=Resource.USER, key=user_id)
            created = token(self._clock.now())
            _insert_token(connection, created)
        return created

    def _add_login_session(
        self, user_id: str, token: NewToken, keep: int
    ) -> tuple[AccessToken, int]:
        """One write transaction: the user's row is locked first (``FOR UPDATE`` on
        PostgreSQL; SQLite's write lock serializes every writer), so two processes logging
        the same user in take turns and each sees the other's session when it counts."""
        user = sa.select(users.c.id).where(users.c.id == user_id)
        with self._writes.begin() as connection:
            if connection.dialect.name == "postgresql":
                user = user.with_for_update()
            if connection.execute(user).first() is None:
                raise NotFound(resource=Resource.USER, key=user_id)
            now = self._clock.now()
            created = token(now)
            _insert_token(connection, created)
            others = (
                sa.select(access_tokens.c.id)
                .where(
                    access_tokens.c.user_id == user_id,
                    access_tokens.c.kind == LOGIN_SESSION,
                    access_tokens.c.id != created.id,
                    access_tokens.c.revoked_at.is_(None),
                    sa.or_(access_tokens.c.expires_at.is_(None), access_tokens.c.expires_at > now),
                )
                .order_by(access_tokens.c.created_at.desc(), access_tokens.c.id.desc())
            )
            ended = list(connection.execute(others).scalars())[max(keep - 1, 0) :]
            if ended:
                connection.execute(
                    sa.update(access_tokens)
                    .where(access_tokens.c.id.in_(ended))
                    .values(revoked_at=now)
                )
        return created, len(ended)

    def find_token(self, token_hash: str) -> AccessToken | None:
        statement = sa.select(access_tokens).where(access_tokens.c.token_hash == token_hash)
        row = read_one(self._engine, statement)
        return _token(row) if row is not None else None

    def get_token(self, token_id: str) -> AccessToken | None:
        row = read_one(self._engine, sa.select(access_tokens).where(access_tokens.c.id == token_id))
        return _token(row) if row is not None else None

    def list_tokens(self, user_id: str) -> tuple[AccessToken, ...]:
        with read_transaction(self._engine) as connection:
            exists = connection.execute(sa.select(users.c.id).where(users.c.id == user_id))
            if exists.first() is None:
                raise NotFound(resource=Resource.USER, key=user_id)
            rows = connection.execute(
                sa.select(access_tokens)
                .where(access_tokens.c.user_id == user_id)
                .order_by(access_tokens.c.created_at, access_tokens.c.id)
            ).mappings()
            return tuple(_token(row) for row in rows)

    def find_token_and_user(self, token_hash: str) -> tuple[AccessToken, User | None] | None:
        with read_transaction(self._engine) as connection:
            row = connection.execute(_token_and_user(), {"token_hash": token_hash}).first()
        if row is None:
            return None
        return _token(row._mapping), _prefixed_user(row._mapping, "owner_")

    def find_token_with_parent(self, token_hash: str) -> CredentialLookup | None:
        with read_transaction(self._engine) as connection:  # one statement
            row = connection.execute(_token_with_parent(), {"token_hash": token_hash}).first()
        if row is None:
            return None
        found = row._mapping
        parent = None
        if found["parent_token_id"] is not None:
            parent = _token({name: found[f"parent_token_{name}"] for name in _TOKEN_FIELDS})
        return CredentialLookup(
            token=_token(found),
            user=_prefixed_user(found, "owner_"),
            parent=parent,
            parent_user=_prefixed_user(found, "parent_owner_"),
        )

    def revoke_token(self, token_id: str) -> bool:
        with self._writes.begin() as connection:
            found = connection.execute(
                sa.select(access_tokens.c.revoked_at).where(access_tokens.c.id == token_id)
            ).first()
            if found is None or found.revoked_at is not None:
                return False
            result = connection.execute(
                sa.update(access_tokens)
                .where(access_tokens.c.id == token_id, access_tokens.c.revoked_at.is_(None))
                .values(revoked_at=self._clock.now())
            )
        return result.rowcount == 1

    def touch_token(self, token_id: str, at: datetime) -> None:
        with self._writes.begin() as connection:
            connection.execute(
                sa.update(access_tokens)
                .where(access_tokens.c.id == token_id)
                .values(last_used_at=at)
            )

    def purge_sessions(self, now: datetime) -> int:
        with self._writes.begin() as connection:
            result = connection.execute(
                sa.delete(access_tokens).where(
                    access_tokens.c.kind == LOGIN_SESSION,
                    sa.or_(
                        access_tokens.c.revoked_at.is_not(None),
                        access_tokens.c.expires_at <= now,
                    ),
                )
            )
        return result.rowcount


def _insert_token(connection: Connection, token: AccessToken) -> None:
    """Write a new token's row (not yet used or revoked)."""
    connection.execute(sa.insert(access_tokens).values(row_values(access_tokens, token)))
