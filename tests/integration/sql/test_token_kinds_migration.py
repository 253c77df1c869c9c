"""Migration ``0002_token_kind`` on both databases: login sessions written by 0001 (told apart
by the name ``session:<hash of their token>``) become ``kind = 'session'`` rows pointing at
their token, keep working, and a personal access token *named* ``session:…`` — which never
authenticated before — is a token that does (issue 16, item 8)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from clarion.adapters.sql import SqlTokenStore, head_revision, upgrade_database
from clarion.adapters.sql.types import Key, UtcDateTime
from clarion.adapters.system import UuidIds
from clarion.app.usecases.auth import Authentication, hash_credential
from clarion.domain.host import LOGIN_SESSION, PERSONAL_ACCESS_TOKEN
from clarion.domain.model import Identity
from clarion.ports.testing import ManualClock
from tests.integration.sql.revisions import BACKENDS, engine_at_revision

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
PAT = "clarion_pat_0123abcd_" + "A" * 43
ODD_PAT = "clarion_pat_4567cdef_" + "B" * 43  # a token whose *name* is session:…
SESSION = "clarion_ses_89abcdef_" + "C" * 43


@pytest.fixture(name="old_engine", params=BACKENDS)
def fixture_old_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An empty database migrated to ``0001_initial`` only."""
    with engine_at_revision(request, tmp_path, "0001_initial") as engine:
        yield engine


def _seed_0001_rows(engine: Engine) -> None:
    """What 0001-era Clarion wrote: a user, two tokens and one login session of the first."""
    users = sa.table(
        "users",
        sa.column("id", Key),
        sa.column("name", sa.Text),
        sa.column("created_at", UtcDateTime),
    )
    tokens = sa.table(
        "access_tokens",
        sa.column("id", Key),
        sa.column("user_id", Key),
        sa.column("name", sa.Text),
        sa.column("token_hash", sa.Text),
        sa.column("created_at", UtcDateTime),
        sa.column("expires_at", UtcDateTime),
    )

    def token(
        token_id: str, name: str, text: str, expires_at: datetime | None = None
    ) -> dict[str, object]:
        return {
            "id": token_id,
            "user_id": "u1",
            "name": name,
            "token_hash": hash_credential(text),
            "created_at": NOW,
            "expires_at": expires_at,
        }

    with engine.begin() as connection:
        connection.execute(sa.insert(users).values(id="u1", name="ada", created_at=NOW))
        connection.execute(
            sa.insert(tokens),
            [
                token("pat", "laptop", PAT),
                token("odd", "session:laptop", ODD_PAT),
                token("ses", "session:" + hash_credential(PAT), SESSION, NOW + timedelta(hours=12)),
            ],
        )


def test_existing_sessions_and_tokens_migrate_to_their_kind(old_engine: Engine) -> None:
    _seed_0001_rows(old_engine)
    assert upgrade_database(old_engine) == head_revision()
    clock = ManualClock(NOW + timedelta(minutes=1))
    store = SqlTokenStore(old_engine, clock, UuidIds())
    by_id = {token.id: token for token in store.list_tokens("u1")}
    assert {key: (t.kind, t.parent_id, t.name) for key, t in by_id.items()} == {
        "pat": (PERSONAL_ACCESS_TOKEN, "", "laptop"),
        "odd": (PERSONAL_ACCESS_TOKEN, "", "session:laptop"),
        "ses": (LOGIN_SESSION, "pat", ""),
    }
    auth = Authentication(store, clock, UuidIds())
    ada = Identity.user("u1")
    assert auth.resolve_bearer(PAT) == ada
    assert auth.resolve_bearer(ODD_PAT) == ada  # the session:-named token authenticates now
    resolved = auth.resolve_session(SESSION)  # the migrated browser session still works
    assert resolved is not None
    assert resolved.identity == ada
    assert auth.resolve_bearer(SESSION) is None
    assert auth.resolve_session(ODD_PAT) is None
    assert auth.revoke_token("pat")
    assert auth.resolve_session(SESSION) is None  # and still ends with its token
