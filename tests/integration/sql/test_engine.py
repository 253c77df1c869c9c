"""The engine factory and the storage of timestamps (upstream §9.18, facts §1.9)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from clarion.adapters.sql import SqlClaimRepository, create_engine
from clarion.adapters.sql.engine import normalize_url, read_one, read_transaction, write_transaction
from clarion.adapters.sql.schema import workspaces
from clarion.adapters.sql.types import format_sqlite_timestamp
from clarion.adapters.system import SystemClock, UuidIds
from clarion.domain.model import ANSWERED, REJECTED, Answer
from clarion.ports.testing import sample_questions
from clarion.ports.testing.world import answers_for
from tests.integration.sql.support import sql_world


def _pragma(engine: Engine, name: str) -> object:
    with engine.connect() as connection:
        return connection.exec_driver_sql(f"PRAGMA {name}").scalar()


def test_sqlite_connections_use_wal_a_busy_timeout_and_foreign_keys(
    sqlite_engine: Engine,
) -> None:
    assert _pragma(sqlite_engine, "journal_mode") == "wal"
    assert _pragma(sqlite_engine, "busy_timeout") == 30_000
    assert _pragma(sqlite_engine, "foreign_keys") == 1


def test_a_sqlite_write_transaction_takes_the_write_lock_at_begin(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    """BEGIN IMMEDIATE: a second writer is refused before the first has written anything,
    so two claims can never both read "pending" and then both write; readers still read."""
    other = sqlite3.connect(tmp_path / "clarion.db", timeout=0, isolation_level=None)
    try:
        with write_transaction(sqlite_engine):
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
            assert other.execute("SELECT count(*) FROM workspaces").fetchone() == (0,)
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
    finally:
        other.close()


def test_a_sqlite_read_transaction_does_not_block_a_writer(
    sqlite_engine: Engine, tmp_path: Path
) -> None:
    other = sqlite3.connect(tmp_path / "clarion.db", timeout=0, isolation_level=None)
    try:
        with sqlite_engine.begin() as connection:
            connection.execute(sa.select(workspaces.c.id)).all()
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
    finally:
        other.close()


def test_a_read_leaves_the_pooled_connection_transactional_for_the_next_writer(
    engine: Engine,
) -> None:
    """Issue #35: on PostgreSQL a read runs on an autocommit connection (no BEGIN/COMMIT round
    trips); the same pooled connection must then give the next writer a real transaction —
    two statements that commit or roll back together."""
    now = datetime.now(UTC)
    row = {"name": "w", "owner_id": "", "created_at": now, "updated_at": now}
    count = sa.select(sa.func.count()).select_from(workspaces)
    with read_transaction(engine) as connection:
        assert connection.execute(count).scalar() == 0

    def abandon() -> None:
        with write_transaction(engine) as connection:
            connection.execute(sa.insert(workspaces), [row | {"id": "w1"}, row | {"id": "w2"}])
            assert connection.execute(count).scalar() == 2
            raise RuntimeError("abandoned")

    with pytest.raises(RuntimeError, match="abandoned"):
        abandon()
    assert read_one(engine, sa.select(workspaces.c.id)) is None
    with write_transaction(engine) as connection:
        connection.execute(sa.insert(workspaces), [row | {"id": "w3"}])
    found = read_one(engine, sa.select(workspaces.c.id))
    assert found is not None
    assert found["id"] == "w3"


def test_an_in_memory_sqlite_database_is_refused() -> None:
    """Concurrent claims need connections that share one database file."""
    with pytest.raises(ValueError, match="file-backed"):
        create_engine("sqlite://")
    with pytest.raises(ValueError, match="file-backed"):
        create_engine("sqlite:///:memory:")


def test_other_databases_are_refused_and_bare_postgresql_urls_use_psycopg() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        create_engine("mysql://user@localhost/db")
    assert normalize_url("postgresql://u@h/db").drivername == "postgresql+psycopg"


def test_repositories_refuse_an_engine_the_factory_did_not_configure(tmp_path: Path) -> None:
    plain = sa.create_engine(f"sqlite:///{tmp_path / 'plain.db'}")
    try:
        with pytest.raises(ValueError, match="create_engine"):
            SqlClaimRepository(plain, SystemClock(), UuidIds())
    finally:
        plain.dispose()


def test_sqlite_timestamps_are_fixed_width_utc_text_in_chronological_order() -> None:
    """Facts §1.9: text order is time order, even across offsets and before year 1000."""
    moments = [
        datetime(999, 1, 1, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 1, 1, 5, 30, 0, 2, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(2026, 1, 1, 1, 0, tzinfo=UTC),
    ]
    texts = [format_sqlite_timestamp(moment) for moment in moments]
    assert {len(text) for text in texts} == {26}
    assert sorted(texts) == [format_sqlite_timestamp(m) for m in sorted(moments)]
    assert texts[2] == "2026-01-01T00:00:00.000002"


def test_a_naive_timestamp_is_refused(engine: Engine) -> None:
    with pytest.raises(sa.exc.StatementError, match="naive datetime"), engine.begin() as conn:
        conn.execute(
            sa.insert(workspaces).values(
                id="w", name="w", created_at=datetime(2026, 1, 1), updated_at=datetime(2026, 1, 1)
            )
        )


def test_timestamps_round_trip_exactly_as_aware_utc_microseconds(engine: Engine) -> None:
    moment = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=timezone(timedelta(hours=-8)))
    with engine.begin() as connection:
        connection.execute(
            sa.insert(workspaces).values(id="w", name="w", created_at=moment, updated_at=moment)
        )
    with engine.connect() as connection:
        stored = connection.execute(sa.select(workspaces.c.created_at)).scalar_one()
    assert stored == moment
    assert stored.tzinfo == UTC
    assert stored.microsecond == 891011


@pytest.mark.parametrize("terminal", [ANSWERED, REJECTED])
def test_winner_loser_and_list_read_one_responded_at_with_a_real_clock(
    engine: Engine, terminal: str
) -> None:
    """§9.18: the claim's timestamp, with live microseconds, is what every reader sees."""
    world = sql_world(engine)
    clock = SystemClock()
    claims = SqlClaimRepository(engine, clock, UuidIds())
    session = world.session()
    bundle = claims.create_bundle(
        pending_id="p-1",
        session_id=session.id,
        task_id=session.task_id,
        questions=sample_questions(2),
        context="",
    )
    responses = answers_for(bundle, 1, "x") if terminal == ANSWERED else None
    won = claims.complete_active_bundle("p-1", terminal, responses)
    assert won.claimed
    assert won.responded_at is not None
    assert claims.complete_active_bundle("p-1", terminal, responses).claimed is False
    reread = claims.load_bundle("p-1")
    assert reread is not None
    assert {row.updated_at for row in reread.rows} == {won.responded_at}
    assert {row.updated_at for row in won.rows} == {won.responded_at}
    finalized = claims.finalize_delivery("p-1", terminal, won.claimed_ids)
    assert finalized is not None
    assert {row.updated_at for row in finalized} == {won.responded_at}


def test_answer_text_beyond_ascii_is_stored_and_read_back_verbatim(engine: Engine) -> None:
    """N8b text (astral, CJK, accents, quotes) survives the claim's JSON edit on both
    databases, for the winner and for every later reader."""
    world = sql_world(engine)
    bundle = world.bundle_in_new_session("p-1")
    text = 'é本😀𠀋 "quoted" \\ back\tslash'
    (row,) = bundle.rows
    answer = {row.question_id: Answer(question_id=row.question_id, custom_text=text)}
    won = world.claims.complete_active_bundle("p-1", ANSWERED, answer)
    assert won.claimed
    assert won.rows[0].response == answer[row.question_id]
    assert world.bundle("p-1").rows[0].response == answer[row.question_id]
