"""The migrated schema: it equals the metadata, it never has a resolutions table (P1), and
upgrading is idempotent on both databases."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Engine

from clarion.adapters.sql import (
    TABLE_NAMES,
    create_engine,
    head_revision,
    metadata,
    upgrade_database,
)
from clarion.adapters.sql.migrate import alembic_config
from clarion.adapters.sql.records import KEY_COLUMNS, bundle_keys, message_record
from clarion.adapters.sql.schema import messages, task_session_turns, task_sessions, tasks
from clarion.domain.listing import ListQuery, Visibility
from clarion.domain.model import CLARIFICATION_REQUEST
from clarion.domain.rows import question_json
from clarion.ports.testing.world import row_metadata, sample_questions
from tests.integration.sql.support import (
    sql_world,
    table_names,
)

# SQLite cannot reflect expression indexes; alembic and SQLAlchemy say so with a warning and
# leave them out of the comparison, so the SQLite test compares their DDL directly instead.
_EXPRESSION_INDEX_WARNINGS = (
    "Skipped unsupported reflection of expression-based index",
    "autogenerate skipping metadata-specified expression-based index",
)


def _schema_differences(engine: Engine) -> list[object]:
    with warnings.catch_warnings():
        for text in _EXPRESSION_INDEX_WARNINGS:
            warnings.filterwarnings("ignore", message=text)
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"compare_type": True, "compare_server_default": True}
            )
            return list(compare_metadata(context, metadata))


def test_the_migrated_schema_equals_the_metadata(engine: Engine) -> None:
    """Autogenerate finds nothing to change after ``upgrade_database`` (both databases)."""
    assert _schema_differences(engine) == []


def test_sqlite_expression_and_partial_indexes_are_created_as_the_metadata_declares(
    sqlite_engine: Engine,
) -> None:
    """The indexes SQLite cannot reflect are compared by their stored DDL."""
    with sqlite_engine.connect() as connection:
        stored: dict[str, str] = dict(
            connection.execute(
                sa.text(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                )
            ).all()
        )
    for index in messages.indexes:
        expected = str(sa.schema.CreateIndex(index).compile(dialect=sqlite_engine.dialect))
        assert stored[str(index.name)] == expected


def test_no_clarification_resolutions_table_exists_after_migration(engine: Engine) -> None:
    """P1: the claim lives in message metadata; the retired table is never created."""
    names = table_names(engine)
    assert "clarification_resolutions" not in names
    assert "clarification_resolutions" not in TABLE_NAMES
    assert set(TABLE_NAMES) <= set(names)


def test_upgrading_again_changes_nothing_and_reports_the_head(engine: Engine) -> None:
    assert upgrade_database(engine) == head_revision()
    assert _schema_differences(engine) == []


def test_a_database_url_is_created_migrated_and_released(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert upgrade_database(url) == head_revision()
    engine = create_engine(url)
    try:
        assert "task_session_messages" in table_names(engine)
    finally:
        engine.dispose()


def test_deleting_a_task_cascades_through_the_foreign_keys(engine: Engine) -> None:
    """Task → sessions → turns → messages, enforced by the database itself (facts §1.1)."""
    world = sql_world(engine)
    bundle = world.bundle_in_new_session("p-1", questions=2)
    session = world.host.get_session(bundle.session_id)
    assert session is not None
    with engine.begin() as connection:
        connection.execute(sa.delete(tasks).where(tasks.c.id == session.task_id))
    with engine.connect() as connection:
        for table in (task_sessions, task_session_turns, messages):
            assert connection.execute(sa.select(sa.func.count()).select_from(table)).scalar() == 0


def test_a_task_may_name_an_empty_or_missing_workspace(engine: Engine) -> None:
    """``tasks.workspace_id`` has no foreign key: "" and dangling ids are legal (L1c, D5)."""
    world = sql_world(engine)
    assert world.task("").workspace_id == ""
    assert world.task("no-such-workspace").workspace_id == "no-such-workspace"


@pytest.fixture(
    name="engine_at_0001",
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def fixture_engine_at_0001(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A fresh database migrated to ``0001_initial`` only."""
    url = (
        f"sqlite:///{tmp_path / 'old.db'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("postgres_database_url"))
    )
    engine = create_engine(url)
    try:
        config = alembic_config()
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "0001_initial")
        yield engine
    finally:
        engine.dispose()


def test_0003_backfills_the_bundle_keys_of_existing_rows(engine_at_0001: Engine) -> None:
    """Issue 15: rows written before the bundle keys existed get them from the migrations
    (0003, and 0010 for the M5 task id and L16), the same keys the repositories write, so
    they list in L6 order and deduplicate."""
    engine = engine_at_0001
    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    old_columns = [c for c in messages.c if not c.name.startswith("bundle_")]
    old_messages = sa.table(messages.name, *(sa.column(c.name, c.type) for c in old_columns))
    with engine.begin() as connection:
        connection.execute(
            sa.insert(tasks),
            [{"id": "t", "title": "t", "created_at": stamp, "updated_at": stamp}],
        )
        connection.execute(
            sa.insert(task_sessions),
            [
                {
                    "id": "s",
                    "task_id": "t",
                    "state": "RUNNING",
                    "created_at": stamp,
                    "updated_at": stamp,
                }
            ],
        )
        connection.execute(
            sa.insert(task_session_turns),
            [
                {
                    "id": "u",
                    "task_session_id": "s",
                    "task_id": "t",
                    "started_at": stamp,
                    "created_at": stamp,
                    "updated_at": stamp,
                }
            ],
        )
        rows = []
        for n, (pending_id, number) in enumerate([("late", 1), ("early", 1), ("early", 2)]):
            at = stamp + timedelta(seconds=10 - 5 * n if pending_id == "late" else n)
            question = sample_questions(2)[number - 1]
            rows.append(
                {
                    "id": f"m{n}",
                    "task_session_id": "s",
                    "task_id": "t",
                    "turn_id": "u",
                    "type": CLARIFICATION_REQUEST,
                    "metadata": row_metadata(
                        pending_id,
                        question_id=question.id,
                        index=number - 1,
                        question=question_json(question),
                    ),
                    "created_at": at,
                    "updated_at": at,
                }
            )
        # "late" carries no row task id (M5: the session's task), "noid" no question id (L16)
        rows[0]["task_id"] = ""
        rows.append(
            {
                **rows[1],
                "id": "m3",
                "metadata": row_metadata("noid", question_id=None, index=0),
            }
        )
        connection.execute(sa.insert(old_messages), rows)
    assert upgrade_database(engine) == head_revision()
    assert _schema_differences(engine) == []
    with engine.connect() as connection:
        stored = connection.execute(sa.select(messages).order_by(messages.c.id)).mappings().all()
    records = [message_record(row) for row in stored]
    keys = bundle_keys(records)
    for row, record in zip(stored, records, strict=True):
        expected = keys[record.metadata["pending_id"]]
        assert tuple(row[column.name] for column in KEY_COLUMNS) == expected
    world = sql_world(engine)
    listed = world.claims.list_active_bundles(ListQuery(visibility=Visibility.everything()))
    assert [(b.pending_id, b.task_id) for b in listed.bundles] == [("early", "t"), ("late", "t")]
    assert [(keys[p].task_id, keys[p].complete) for p in ("early", "late", "noid")] == [
        ("t", True),
        ("", True),
        ("t", False),
    ]
    assert world.claims.find_active_duplicate("s", sample_questions(2)) == "early"
