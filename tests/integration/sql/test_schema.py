"""The migrated schema: it equals the metadata, it never has a resolutions table (P1), and
upgrading is idempotent on both databases."""

from __future__ import annotations

import warnings
from pathlib import Path

import sqlalchemy as sa
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
from clarion.adapters.sql.schema import messages, task_session_turns, task_sessions, tasks
from tests.integration.sql.support import sql_world, table_names

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
