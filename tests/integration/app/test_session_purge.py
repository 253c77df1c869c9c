"""Ended browser sessions do not pile up (issue 14): the served application deletes expired
and logged-out session records when it starts (and every hour after), on SQLite and
PostgreSQL; personal access tokens are never deleted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from clarion.adapters.memory import (
    InMemoryClaimRepository,
    InMemoryHostRepository,
    InMemoryStore,
    InMemoryTokenStore,
)
from clarion.adapters.system import UuidIds
from clarion.app.root.compose import Storage, build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.host import LOGIN_SESSION
from clarion.ports.testing import ManualClock

pytestmark = pytest.mark.anyio


@pytest.fixture(
    name="database_url", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def fixture_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'purge.db'}"
    return str(request.getfixturevalue("postgres_database_url"))


async def test_starting_the_application_purges_ended_sessions_and_keeps_tokens(
    database_url: str,
) -> None:
    clock = ManualClock(datetime.now(UTC))
    settings = Settings(database_url=database_url, auth_enabled=True, live_delivery="memory")
    clarion = build_clarion(settings, clock=clock)
    clarion.upgrade()  # start-up's storage step, so the tokens can be seeded before serving
    auth = clarion.authentication
    try:
        user = auth.create_user("ada")
        token = auth.issue_token(user.id)
        expiring, logged_out = auth.login(token.token), auth.login(token.token)
        assert expiring is not None
        assert logged_out is not None
        assert auth.logout(logged_out.cookie)
        clock.advance(timedelta(hours=12))  # the session lifetime: ``expiring`` has ended
        kinds = sorted(t.kind for t in auth.list_tokens(user.id))
        assert kinds == ["pat", LOGIN_SESSION, LOGIN_SESSION]
        app = clarion.asgi_app
        async with app.router.lifespan_context(app):
            assert [t.id for t in auth.list_tokens(user.id)] == [token.record.id]
        assert auth.resolve_bearer(token.token) is not None
    finally:
        clarion.close()


class _UnpurgeableTokens(InMemoryTokenStore):
    """A token store whose database refuses the purge."""

    attempts = 0

    def purge_sessions(self, now: datetime) -> int:
        type(self).attempts += 1
        raise RuntimeError("disk I/O error")


async def test_a_failing_purge_is_logged_and_the_application_still_starts() -> None:
    store = InMemoryStore()
    clock, ids = ManualClock(), UuidIds()
    tokens = _UnpurgeableTokens(store, clock, ids)
    storage = Storage(
        claims=InMemoryClaimRepository(store, clock, ids),
        host=InMemoryHostRepository(store, clock, ids),
        tokens=tokens,
    )
    clarion = build_clarion(Settings(database_url="memory://"), storage=storage, clock=clock)
    app = clarion.asgi_app
    with capture_logs() as logs:
        async with app.router.lifespan_context(app):
            assert _UnpurgeableTokens.attempts == 1
    assert [entry["event"] for entry in logs if entry["log_level"] == "warning"] == [
        "sessions.purge_failed"
    ]
