"""The host model Clarion needs around a bundle: workspaces, tasks, sessions and turns.

In standalone mode Clarion is their system of record; an embedding service may own them and
supply its own repository and authorizer instead.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

import attrs


@attrs.frozen
class Workspace:
    id: str
    name: str
    owner_id: str  # "" = unowned, visible to every caller
    created_at: datetime


@attrs.frozen
class Task:
    id: str
    title: str
    workspace_id: str  # "" is legal and may dangle (no foreign key)
    created_at: datetime


@attrs.frozen
class Session:
    id: str
    task_id: str
    state: str
    is_primary: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None
    agent_token_hash: str = ""


@attrs.frozen
class Turn:
    id: str
    session_id: str
    started_at: datetime
    created_at: datetime
    completed_at: datetime | None = None


@attrs.frozen
class User:
    id: str
    name: str
    is_admin: bool
    created_at: datetime
    active: bool = True


# What a stored credential is. Told apart by this value, never by its name: a personal
# access token may be named anything, ``session:…`` included.
PERSONAL_ACCESS_TOKEN: Final = "pat"
LOGIN_SESSION: Final = "session"
TOKEN_KINDS: Final = frozenset({PERSONAL_ACCESS_TOKEN, LOGIN_SESSION})


@attrs.frozen
class AccessToken:
    """A stored credential: a personal access token (``kind`` ``"pat"``) or a browser login
    session (``"session"``, whose ``parent_id`` is the token it was opened with). Only the
    SHA-256 of the credential's text is kept."""

    id: str
    user_id: str
    name: str
    token_hash: str
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    kind: str = PERSONAL_ACCESS_TOKEN
    parent_id: str = ""

    def usable_at(self, now: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)
