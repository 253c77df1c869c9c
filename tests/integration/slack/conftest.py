"""Fixtures: the fake Slack Web API and a served Clarion next to it, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.slack.fake_slack import FakeSlack, fake_slack
from tests.integration.slack.support import SlackWorld, slack_world


@pytest.fixture(
    name="database_url",
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def fixture_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'clarion.db'}"
    else:
        make: Callable[[], str] = request.getfixturevalue("make_postgres_database")
        yield make()


@pytest.fixture(name="fake")
async def fixture_fake() -> AsyncIterator[FakeSlack]:
    async with fake_slack() as fake:
        yield fake


@pytest.fixture(name="world")
async def fixture_world(database_url: str, fake: FakeSlack) -> AsyncIterator[SlackWorld]:
    async with slack_world(database_url, fake) as world:
        yield world
