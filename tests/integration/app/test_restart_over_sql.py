"""The application over the durable store: a process restart between ask and answer (R6),
answered by racing callers, resumed through the default outbox (R7), on SQLite and PostgreSQL."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import attrs
import pytest
from sqlalchemy.engine import Engine

from clarion.adapters.events import InProcessEventBus
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.resume import OutboxResumeDispatcher
from clarion.adapters.sql import (
    SqlClaimRepository,
    SqlHostRepository,
    create_engine,
    upgrade_database,
)
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.services import Services, build_services
from clarion.domain.model import ANSWERED, Answer, Identity, Outcome, Resolution
from clarion.domain.questions import OptionDraft, QuestionDraft
from clarion.domain.resolved_by import Surface

pytestmark = pytest.mark.anyio

OWNER = Identity.user("alice")
UNSCOPED = Identity.synthetic_admin()
QUESTIONS = (
    QuestionDraft(
        prompt="Which database?",
        options=(OptionDraft("SQLite", "embedded"), OptionDraft("PostgreSQL", "server")),
    ),
    QuestionDraft(
        prompt="Which regions?",
        options=(OptionDraft("EU", "Europe"), OptionDraft("US", "America")),
    ),
)


def _process(url: str) -> tuple[Services, Engine]:
    """One Clarion process: its own engine, waiters, events and outbox over the database."""
    engine = create_engine(url)
    upgrade_database(engine)
    clock, ids = SystemClock(), UuidIds()
    host = SqlHostRepository(engine, clock, ids)
    claims = SqlClaimRepository(engine, clock, ids)
    services = build_services(
        claims=claims,
        host=host,
        authorizer=HostTaskAuthorizer(host),
        waiters=InMemoryWaiters(),
        dispatcher=OutboxResumeDispatcher(claims),
        events=InProcessEventBus(),
        clock=clock,
        ids=ids,
    )
    return services, engine


@pytest.fixture(
    name="database_url", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def fixture_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'clarion.db'}"
    else:
        make: Callable[[], str] = request.getfixturevalue("make_postgres_database")
        yield make()


async def test_restart_between_ask_and_answer_resumes_once_through_the_outbox(
    database_url: str,
) -> None:
    """R6: after a restart the bundle is listed and answerable; among racing answerers
    exactly one claims, the others replay its answers; the agent is resumed once, durably."""
    first, first_engine = _process(database_url)
    workspace = await first.host.create_workspace(OWNER, "ws")
    task = await first.host.create_task(OWNER, "ship it", workspace.id)
    created = await first.host.create_session(OWNER, task.id, is_primary=True)
    session_id = created.session.id
    pending_id = await first.asking.create(OWNER, session_id, QUESTIONS, "deploy plan")
    first_engine.dispose()  # the process is gone; its waiter with it

    second, second_engine = _process(database_url)
    try:
        page = await second.listing.list_pending(OWNER)
        assert [bundle.pending_id for bundle in page.bundles] == [pending_id]
        results: list[Resolution] = []

        async def answer(option: str) -> None:
            outcome = Outcome.answer(
                Answer("q1", (f"q1_{option}",)), Answer("q2", ("q2_opt2", "q2_opt1"))
            )
            results.append(
                await second.resolver.resolve(OWNER, pending_id, outcome, surface=Surface.REST)
            )

        def answer_from_a_thread(option: str) -> None:
            anyio.from_thread.run(answer, option)

        async with anyio.create_task_group() as tasks:
            for option in ("opt1", "opt2") * 3:
                tasks.start_soon(answer, option)
                tasks.start_soon(
                    functools.partial(anyio.to_thread.run_sync, answer_from_a_thread, option)
                )
        winners = [result for result in results if result.claimed]
        assert len(results) == 12
        assert len(winners) == 1
        assert {attrs.evolve(result, claimed=True) for result in results} == {winners[0]}
        assert winners[0].answers[1] == Answer("q2", ("q2_opt1", "q2_opt2"))

        resumes = (await second.host.resumes_for_session(OWNER, session_id)).items
        assert len(resumes) == 1
        assert resumes[0].metadata["pending_id"] == pending_id
        assert "Which database?" in resumes[0].content
        bundle = SqlClaimRepository(second_engine, SystemClock(), UuidIds()).load_bundle(pending_id)
        assert bundle is not None
        assert [row.status for row in bundle.rows] == [ANSWERED, ANSWERED]
        assert not any(row.delivery_pending for row in bundle.rows)
        assert (await second.listing.list_pending(UNSCOPED)).bundles == ()
    finally:
        second_engine.dispose()
