"""Statements on the driver's own cursor (:mod:`clarion.adapters.sql.driver`, issue #34), on
SQLite and PostgreSQL: the rows ``exec_driver_sql`` would give, listeners still seeing every
statement, driver errors raised as SQLAlchemy's, and a lost connection invalidated."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from clarion.adapters.sql.driver import driver_rows
from clarion.adapters.sql.engine import for_writes


def _named(engine: Engine, sql: str) -> str:
    """``sql`` written with ``:name`` parameters, in the driver's own style."""
    return sql.replace(":scope", "%(scope)s") if engine.dialect.name == "postgresql" else sql


@contextmanager
def _seen(engine: Engine) -> Iterator[list[str]]:
    sent: list[str] = []

    def capture(_c: Any, _cur: Any, statement: str, *_rest: Any) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", capture)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", capture)


def _refuse_exec_driver_sql(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on ``exec_driver_sql`` fails: what still works went to the driver's cursor
    (called once the engine is migrated, which uses it)."""

    def refused(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("exec_driver_sql was called")

    monkeypatch.setattr(Connection, "exec_driver_sql", refused)


def _head_rows(connection: Connection, scope: str) -> list[Any]:
    sql = "SELECT scope, seq FROM audit_heads WHERE scope = :scope"
    return driver_rows(connection, _named(connection.engine, sql), {"scope": scope})


def _insert_head(connection: Connection, scope: str) -> list[Any]:
    sql = "INSERT INTO audit_heads (scope, seq, prev_hash, hash) VALUES (:scope, 1, 'p', 'h')"
    return driver_rows(connection, _named(connection.engine, sql), {"scope": scope})


def test_statements_run_on_the_cursor_in_the_connections_transaction(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refuse_exec_driver_sql(monkeypatch)
    with for_writes(engine).begin() as connection:  # SQLite's BEGIN IMMEDIATE: the cursor too
        assert _insert_head(connection, "w1") == []  # a statement returning no rows
        assert _head_rows(connection, "w1") == [("w1", 1)]
    with for_writes(engine).begin() as connection:
        _insert_head(connection, "w2")
        connection.rollback()
    with engine.connect() as connection:
        assert _head_rows(connection, "w1") == [("w1", 1)]
        assert _head_rows(connection, "w2") == []  # rolled back with its transaction
        assert driver_rows(connection, "SELECT 1, 'x'") == [(1, "x")]


def test_listeners_still_see_every_statement(engine: Engine) -> None:
    with _seen(engine) as sent, for_writes(engine).begin() as connection:
        _insert_head(connection, "w1")
        found = _head_rows(connection, "w1")
    assert found == [("w1", 1)]
    assert [s.split()[0] for s in sent if not s.startswith("BEGIN")] == ["INSERT", "SELECT"]
    if engine.dialect.name == "sqlite":
        assert sent[0] == "BEGIN IMMEDIATE"


def test_a_driver_error_is_raised_as_sqlalchemys_with_its_parameters_hidden(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refuse_exec_driver_sql(monkeypatch)
    with for_writes(engine).begin() as connection:
        _insert_head(connection, "kept-scope")
    with for_writes(engine).begin() as connection:
        _insert_head(connection, "secret-scope")
        with pytest.raises(sa.exc.IntegrityError) as raised:
            _insert_head(connection, "kept-scope")
        connection.rollback()
    assert isinstance(raised.value.orig, engine.dialect.loaded_dbapi.IntegrityError)
    assert "audit_heads" in str(raised.value)
    # The engine hides parameters (PostgreSQL's own detail may still quote the key, as it
    # does through exec_driver_sql).
    assert "[SQL parameters hidden due to hide_parameters=True]" in str(raised.value)
    assert "{'scope'" not in str(raised.value)
    assert "secret-scope" not in str(raised.value)
    assert not raised.value.connection_invalidated
    with engine.connect() as connection:  # the whole transaction rolled back
        assert _head_rows(connection, "secret-scope") == []
        assert _head_rows(connection, "kept-scope") == [("kept-scope", 1)]


@pytest.mark.postgres
def test_a_lost_connection_is_invalidated_and_never_handed_out_again(
    postgres_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refuse_exec_driver_sql(monkeypatch)
    with postgres_engine.connect() as connection:
        (pid,) = driver_rows(connection, "SELECT pg_backend_pid()")[0]
        with postgres_engine.connect() as other:
            other.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            other.commit()
        with pytest.raises(sa.exc.OperationalError) as raised:
            driver_rows(connection, "SELECT 1")
        assert raised.value.connection_invalidated
        assert connection.invalidated
    for _ in range(3):  # every pooled connection after it works
        with postgres_engine.connect() as connection:
            assert driver_rows(connection, "SELECT 1") == [(1,)]


def test_an_error_listener_sees_the_driver_error_through_sqlalchemy(engine: Engine) -> None:
    """A ``handle_error`` listener (SQLAlchemy's hook for translating or logging driver errors)
    is called for an error in a statement ``driver_rows`` runs, as for ``exec_driver_sql``."""
    seen: list[str] = []

    def listener(context: Any) -> None:
        seen.append(type(context.original_exception).__name__)

    with for_writes(engine).begin() as connection:
        _insert_head(connection, "kept-scope")
    event.listen(engine, "handle_error", listener)
    try:
        with for_writes(engine).begin() as connection:
            with pytest.raises(sa.exc.IntegrityError):
                _insert_head(connection, "kept-scope")
            connection.rollback()
    finally:
        event.remove(engine, "handle_error", listener)
    assert seen == ["IntegrityError" if engine.dialect.name == "sqlite" else "UniqueViolation"]
