"""The claim's statement as the driver runs it (issue #34), on SQLite and PostgreSQL.

The claim's UPDATE is compiled once per dialect and run on the driver's cursor
(:class:`clarion.adapters.sql.statements.DriverStatement`); on PostgreSQL the audit append is
folded into it (:func:`clarion.adapters.sql.audit.claim_and_append`) whenever the record's
body can be known before the claim runs, and appended by a statement of its own otherwise.
Either way the record must be the one ``ChainEntry.resolution`` builds from the claimed rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine

from clarion.adapters.sql import statements
from clarion.adapters.sql.audit import SqlAuditChain
from clarion.adapters.sql.engine import read_transaction
from clarion.adapters.sql.schema import messages, tasks
from clarion.adapters.sql.statements import Guard
from clarion.domain.audit_chain import ChainEntry, ChainRecord, verify_chain
from clarion.domain.model import ANSWERED, REJECTED, Answer
from clarion.domain.resolved_by import ResolvedBy
from clarion.ports.claims import ClaimResult
from clarion.ports.testing.world import answers_for
from tests.integration.sql.support import sql_world


@contextmanager
def _statements(engine: Engine) -> Iterator[list[str]]:
    """Every statement sent to the driver inside the block."""
    sent: list[str] = []

    def capture(_c: Any, _cur: Any, statement: str, *_rest: Any) -> None:
        sent.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", capture)


def _appends(sent: list[str]) -> list[str]:
    return [s for s in sent if "INSERT INTO audit_chain" in s]


def _only_record(engine: Engine, scope: str) -> ChainRecord:
    audit = SqlAuditChain(engine)
    (record,) = audit.records(scope)
    assert verify_chain(scope, [record], audit.head(scope)).intact
    return record


def _expected_body(
    result: ClaimResult,
    terminal: str,
    responses: dict[str, Answer] | None,
    resolved_by: ResolvedBy | None = None,
) -> str:
    """The body ``ChainEntry.resolution`` builds from the rows the claim returned."""
    assert result.responded_at is not None
    entry = ChainEntry.resolution(
        result.rows, terminal, responses, resolved_by, result.responded_at
    )
    return entry.body


@pytest.mark.parametrize("kind", ["bundle", "claimable", "session_active"])
def test_a_driver_statement_reads_what_execute_reads(engine: Engine, kind: Guard) -> None:
    """Same bound values, same processed values back (timestamps, JSON metadata)."""
    world = sql_world(engine)
    bundle = world.bundle_in_new_session("p1", questions=2)
    statement = statements.select_rows(kind)
    params = {"pending_id": "p1", "session_id": bundle.rows[0].session_id}
    with read_transaction(engine) as connection:
        wanted = [tuple(row) for row in connection.execute(statement, params)]
        driven = statements.DriverStatement.compile(statement, connection.dialect)
        assert driven.rows(connection, params) == wanted
    assert len(wanted) == 2
    assert isinstance(wanted[0][5], dict)  # the metadata came back decoded


def test_a_driver_statement_refuses_expanding_parameters(engine: Engine) -> None:
    with pytest.raises(ValueError, match="session_ids"):
        statements.DriverStatement.compile(statements.sessions_with_active_rows(), engine.dialect)


def test_the_claim_record_is_the_one_its_rows_make(engine: Engine) -> None:
    """Byte for byte what ``ChainEntry.resolution`` makes of the claimed rows; on
    PostgreSQL written by the claim's own statement (no append of its own)."""
    world = sql_world(engine)
    workspace = world.workspace()
    bundle = world.bundle_in_new_session("p1", workspace_id=workspace.id, questions=3)
    responses = answers_for(bundle, 2, "naïve — 東")
    with _statements(engine) as sent:
        result = world.claims.complete_active_bundle("p1", ANSWERED, responses)
    assert result.claimed
    record = _only_record(engine, workspace.id)
    assert record.body == _expected_body(result, ANSWERED, responses)
    folded = engine.dialect.name == "postgresql"
    assert len(_appends(sent)) == 1
    assert _appends(sent)[0].startswith("WITH claimed AS ( UPDATE") is folded


@pytest.mark.parametrize("terminal", [ANSWERED, REJECTED])
def test_responses_for_questions_not_claimed_are_left_out(engine: Engine, terminal: str) -> None:
    """A response naming a question the bundle has not: the record keeps only the claimed
    rows' (PostgreSQL: the folded append sees it and leaves the record to its own
    statement)."""
    world = sql_world(engine)
    bundle = world.bundle_in_new_session("p1", questions=2)
    extra = Answer(question_id="elsewhere", selected_options=("elsewhere_opt1",))
    responses = {**answers_for(bundle), "elsewhere": extra}
    with _statements(engine) as sent:
        result = world.claims.complete_active_bundle("p1", terminal, responses)
    assert result.claimed
    record = _only_record(engine, "")
    assert record.body == _expected_body(result, terminal, responses)
    assert "elsewhere" not in record.body
    # PostgreSQL tries the folded append for an answer (and appends nothing there); a
    # rejection's responses are not bound in the claim, so it is not tried.
    tried = engine.dialect.name == "postgresql" and terminal == ANSWERED
    appends = _appends(sent)
    assert len(appends) == 1 + tried
    assert not appends[-1].startswith("WITH claimed AS")


def test_rows_without_a_task_are_chained_in_their_sessions_workspace(engine: Engine) -> None:
    """M5: the rows' task id is empty, so the scope is the workspace of the session's task,
    found from the claimed rows inside the statement."""
    world = sql_world(engine)
    workspace = world.workspace()
    session = world.session(workspace_id=workspace.id)
    bundle = world.ask(session.id, "p1", questions=2, task_id="")
    assert all(row.task_id == "" for row in bundle.rows)
    responses = answers_for(bundle)
    result = world.claims.complete_active_bundle("p1", ANSWERED, responses)
    record = _only_record(engine, workspace.id)
    assert record.body == _expected_body(result, ANSWERED, responses)


def test_the_smallest_row_task_decides_the_workspace(engine: Engine) -> None:
    """Rows on two tasks (a legacy bundle): the smallest non-empty task id in code-point
    order names the workspace (``resolve_task_id``): "Z-…" before "a-…", as the statement
    compares them (``COLLATE "C"``; most linguistic collations would put it after)."""
    world = sql_world(engine)
    first, second = world.workspace("a"), world.workspace("b")
    session = world.session(workspace_id=second.id)
    bundle = world.ask(session.id, "p1", questions=2)
    upper, lower = sorted(row.id for row in bundle.rows)
    now = datetime.now(UTC)
    task = {"title": "legacy", "created_at": now, "updated_at": now}
    with engine.begin() as connection:
        connection.execute(
            sa.insert(tasks),
            [
                {**task, "id": "Z-task", "workspace_id": first.id},
                {**task, "id": "a-task", "workspace_id": second.id},
            ],
        )
        for row_id, task_id in ((upper, "a-task"), (lower, "Z-task")):
            connection.execute(
                sa.update(messages).where(messages.c.id == row_id).values(task_id=task_id)
            )
    responses = answers_for(bundle)
    result = world.claims.complete_active_bundle("p1", ANSWERED, responses)
    assert result.claimed
    record = _only_record(engine, first.id)
    assert record.body == _expected_body(result, ANSWERED, responses)
