"""Start-up warns when PostgreSQL will never gather planner statistics for the bundle rows
(issue #35, tenth pass): without them the planner took the partial index of pending rows for
nearly empty and claimed each answer by reading every pending row (4.9 ms instead of 0.9 ms
per claim with 5,000 pending, ``benchmarks/waiters_bench.py --stale-statistics``)."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
import structlog
from sqlalchemy.engine import Engine
from structlog.testing import capture_logs

from clarion.adapters.sql import autovacuum_disabled, create_engine
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.root import storage
from clarion.app.root.storage import AUTOVACUUM_ADVICE, Startup, Storage

MESSAGES = "task_session_messages"


def _table_autovacuum(engine: Engine, value: str) -> None:
    with engine.begin() as connection:
        connection.exec_driver_sql(f"ALTER TABLE {MESSAGES} SET (autovacuum_enabled = {value})")


def _server_autovacuum(engine: Engine) -> bool:
    with engine.connect() as connection:
        return bool(connection.exec_driver_sql("SHOW autovacuum").scalar_one() == "on")


def test_a_table_with_autovacuum_switched_off_is_reported(postgres_engine: Engine) -> None:
    _table_autovacuum(postgres_engine, "off")
    try:
        assert autovacuum_disabled(postgres_engine)
    finally:
        _table_autovacuum(postgres_engine, "on")


def test_otherwise_the_servers_own_setting_decides(postgres_engine: Engine) -> None:
    # The table's option set to on does not override a server that never runs autovacuum
    # (this repository's CI server runs with autovacuum off; an embedded one with it on).
    server_runs_it = _server_autovacuum(postgres_engine)
    _table_autovacuum(postgres_engine, "on")
    assert autovacuum_disabled(postgres_engine) is not server_runs_it
    with postgres_engine.begin() as connection:
        connection.exec_driver_sql(f"ALTER TABLE {MESSAGES} RESET (autovacuum_enabled)")
    assert autovacuum_disabled(postgres_engine) is not server_runs_it


def test_sqlite_never_is(sqlite_engine: Engine) -> None:
    assert not autovacuum_disabled(sqlite_engine)


@pytest.fixture(autouse=True)
def fresh_module_logger(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module logger first used under another test's configuration (the CLI's
    ``configure_logging`` caches loggers on first use) would log past ``capture_logs``."""
    monkeypatch.setattr(storage, "log", structlog.get_logger(storage.__name__))


def _started(url: str) -> list[MutableMapping[str, Any]]:
    startup = Startup(Storage.sql(create_engine(url), SystemClock(), UuidIds()))
    try:
        with capture_logs() as logs:
            startup.upgrade()
    finally:
        startup.close()
    return [entry for entry in logs if entry["event"] == "database.autovacuum_off"]


def test_start_up_warns_with_what_to_do(postgres_database_url: str) -> None:
    engine = create_engine(postgres_database_url)
    try:
        Startup(Storage.sql(engine, SystemClock(), UuidIds())).upgrade()  # the schema
        _table_autovacuum(engine, "off")
    finally:
        engine.dispose()
    (warning,) = _started(postgres_database_url)
    assert warning["log_level"] == "warning"
    assert warning["advice"] == AUTOVACUUM_ADVICE
    assert "ANALYZE" in AUTOVACUUM_ADVICE


def test_start_up_on_sqlite_says_nothing_of_it(tmp_path: Path) -> None:
    assert _started(f"sqlite:///{tmp_path / 'clarion.db'}") == []


def test_start_up_warns_exactly_when_the_server_runs_no_autovacuum(
    postgres_database_url: str,
) -> None:
    engine = create_engine(postgres_database_url)
    try:
        Startup(Storage.sql(engine, SystemClock(), UuidIds())).upgrade()
        server_runs_it = _server_autovacuum(engine)
    finally:
        engine.dispose()
    assert (_started(postgres_database_url) == []) is server_runs_it
