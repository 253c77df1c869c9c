"""Concurrency on real databases: one winner per bundle under many threads (and, on
PostgreSQL, several engines), and a terminal session change racing a claim (facts §1.7)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine

from clarion.adapters.sql import SqlClaimRepository, SqlHostRepository, create_engine
from clarion.adapters.sql.locks import LOCK_PREFIX, lock_bundle, lock_sessions
from clarion.adapters.system import UuidIds
from clarion.domain.model import ANSWERED, EXPIRED, Answer, SessionState
from clarion.domain.rows import Bundle
from clarion.ports.claims import ClaimResult
from clarion.ports.testing import ContractWorld, ManualClock
from clarion.ports.testing.world import answers_for
from tests.integration.sql.support import sql_world

RACERS = 8
ROUNDS = 30
TERMINAL_ROUNDS = 30
MAX_TERMINAL_ROUNDS = 400


def run_together(tasks: list[Callable[[], Any]]) -> list[Any]:
    """Start every task at one barrier on its own thread; re-raise the first error."""
    barrier = threading.Barrier(len(tasks))
    results: list[Any] = [None] * len(tasks)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = tasks[index]()
        except BaseException as exc:  # noqa: BLE001 - a thread's top level; re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(tasks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    if errors:
        raise errors[0]
    return results


@pytest.fixture(name="second_engine")
def fixture_second_engine(engine: Engine) -> Iterator[Engine]:
    """Another pool on the same database, as a second Clarion process would have."""
    other = create_engine(engine.url)
    try:
        yield other
    finally:
        other.dispose()


def racer_answers(bundle: Bundle, racer: int) -> dict[str, Answer]:
    return answers_for(bundle, 1 + racer % 2, f"racer {racer}")


def test_many_threads_claiming_one_bundle_have_exactly_one_winner_every_time(
    engine: Engine, second_engine: Engine
) -> None:
    """R1/R3 on the database: 8 racers over two engines, 30 rounds; each loser's re-read
    (R2, one read) already sees the winner's rows and timestamp."""
    world = sql_world(engine)
    repositories = [
        SqlClaimRepository(pool, world.clock, UuidIds()) for pool in (engine, second_engine)
    ]
    connections: set[int] = set()

    def remember(dbapi_connection: Any, *_args: Any) -> None:
        connections.add(id(dbapi_connection))

    for pool in (engine, second_engine):
        event.listen(pool, "checkout", remember)

    for round_number in range(ROUNDS):
        bundle = world.bundle_in_new_session(f"race-{round_number}", questions=2)

        def racer(n: int, bundle: Bundle = bundle) -> tuple[ClaimResult, Bundle | None]:
            claims = repositories[n % 2]
            result = claims.complete_active_bundle(
                bundle.pending_id, ANSWERED, racer_answers(bundle, n)
            )
            return result, None if result.claimed else claims.load_bundle(bundle.pending_id)

        outcomes = run_together([functools.partial(racer, n) for n in range(RACERS)])
        winners = [n for n, (result, _) in enumerate(outcomes) if result.claimed]
        assert len(winners) == 1, f"round {round_number}: winners {winners}"
        won = outcomes[winners[0]][0]
        expected = racer_answers(bundle, winners[0])
        assert {row.question_id: row.response for row in won.rows} == expected
        for result, reread in outcomes:
            if result.claimed:
                continue
            assert result.rows == ()
            assert reread is not None
            assert {row.question_id: row.response for row in reread.rows} == expected
            assert {row.status for row in reread.rows} == {ANSWERED}
            assert {row.updated_at for row in reread.rows} == {won.responded_at}
    assert len(connections) > 2


@pytest.mark.postgres
def test_a_terminal_session_change_racing_a_claim_never_leaves_a_claimed_bundle_expired(
    postgres_engine: Engine,
) -> None:
    """Facts §1.7 / §4.3: the claim and the terminal-state change serialize on the session
    lock, so the bundle ends either claimed (answered) or expired — never both, and never
    claimed after the session was already terminal."""
    clock = ManualClock()
    world = sql_world(postgres_engine, clock=clock)
    host = SqlHostRepository(postgres_engine, clock, UuidIds())
    claims = SqlClaimRepository(postgres_engine, clock, UuidIds())
    outcomes: set[bool] = set()

    round_number = 0
    # At least TERMINAL_ROUNDS rounds, and on until both interleavings have been seen (each
    # happens in a few percent of rounds or more; the cap only stops a broken lock forever).
    while round_number < TERMINAL_ROUNDS or (
        outcomes != {True, False} and round_number < MAX_TERMINAL_ROUNDS
    ):
        round_number += 1
        bundle = world.bundle_in_new_session(f"term-{round_number}", questions=2)
        session_id = bundle.session_id

        def claim(bundle: Bundle = bundle) -> ClaimResult:
            return claims.complete_active_bundle(bundle.pending_id, ANSWERED, answers_for(bundle))

        def end_session(session_id: str = session_id) -> int:
            changed = host.set_session_state(session_id, SessionState.COMPLETED)
            assert changed is not None
            expired = 0
            for pending_id in claims.active_pending_ids(session_id):
                expired += len(claims.expire_active_bundle(session_id, pending_id))
            return expired

        result, expired = run_together([claim, end_session])
        rows = world.bundle(bundle.pending_id).rows
        statuses = {row.status for row in rows}
        if result.claimed:
            assert statuses == {ANSWERED}
            assert expired == 0
            # Serialized on the session lock: the claim committed before the state change.
            ended = host.get_session(session_id)
            assert ended is not None
            assert ended.updated_at is not None
            assert result.responded_at is not None
            assert result.responded_at < ended.updated_at
        else:
            assert statuses == {EXPIRED}
            assert expired == 2
        outcomes.add(result.claimed)
        assert claims.complete_active_bundle(bundle.pending_id, ANSWERED, answers_for(bundle)) == (
            ClaimResult(claimed=False)
        )
    # Both interleavings occurred, so both branches above were exercised.
    assert outcomes == {True, False}


def test_concurrent_claims_on_different_bundles_all_win(engine: Engine) -> None:
    """Serialization is per bundle outcome, not a global refusal: every bundle is claimed."""
    world: ContractWorld = sql_world(engine)
    bundles = [world.bundle_in_new_session(f"own-{n}") for n in range(RACERS)]
    results = run_together(
        [
            functools.partial(
                world.claims.complete_active_bundle, b.pending_id, ANSWERED, answers_for(b)
            )
            for b in bundles
        ]
    )
    assert all(result.claimed for result in results)


@pytest.mark.postgres
def test_the_bundle_lock_is_the_session_lock_every_session_write_takes(
    postgres_engine: Engine,
) -> None:
    """Facts §1.7: a claim's lock on its bundle holds the very advisory lock (and the session
    row) that session-state changes and new turns take, so they wait for each other."""
    world = sql_world(postgres_engine)
    bundle = world.bundle_in_new_session("p-1")
    probe = sa.select(
        sa.func.pg_try_advisory_xact_lock(
            sa.func.hashtextextended(LOCK_PREFIX + bundle.session_id, 0)
        )
    )
    with postgres_engine.begin() as holder:
        assert lock_bundle(holder, "p-1") == (bundle.session_id,)
        with postgres_engine.begin() as other:
            assert other.execute(probe).scalar() is False
            row_lock = sa.text(
                "SELECT id FROM task_sessions WHERE id = :id FOR UPDATE NOWAIT"
            ).bindparams(id=bundle.session_id)
            with pytest.raises(sa.exc.OperationalError, match="could not obtain lock"):
                other.execute(row_lock)
    with postgres_engine.begin() as holder:
        lock_sessions(holder, [bundle.session_id])
        with postgres_engine.begin() as other:
            assert other.execute(probe).scalar() is False
    with postgres_engine.begin() as free:
        assert free.execute(probe).scalar() is True
