"""The composition root builds only what was not injected, and migrates only at start-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
from starlette.testclient import TestClient

from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.sql import create_engine
from clarion.adapters.system import UuidIds
from clarion.app.root.compose import Storage, build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.errors import NotFound
from clarion.domain.model import Identity
from clarion.domain.questions import OptionDraft, QuestionDraft
from clarion.ports.testing import ManualClock


@pytest.fixture(name="engines")
def fixture_engines(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every SQLAlchemy engine created while the test runs."""
    created: list[object] = []
    real = sqlalchemy.create_engine

    def counting(*args: Any, **kwargs: Any) -> Any:
        engine = real(*args, **kwargs)
        created.append(engine)
        return engine

    monkeypatch.setattr(sqlalchemy, "create_engine", counting)
    return created


def test_building_with_injected_storage_creates_no_file_and_opens_no_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engines: list[object]
) -> None:
    monkeypatch.chdir(tmp_path)
    clock, ids = ManualClock(), UuidIds()
    storage = Storage.in_memory(clock, ids)
    # The default database URL names ./clarion.db, and PostgreSQL live delivery is not asked
    # for: neither may lead to a database being opened.
    clarion = build_clarion(Settings(), storage=storage, clock=clock, ids=ids)
    with TestClient(clarion.asgi_app, base_url="http://127.0.0.1") as client:  # start-up included
        assert client.get("/healthz").status_code == 200
    clarion.close()
    assert clarion.engine is None
    assert clarion.storage is storage
    assert list(tmp_path.iterdir()) == []
    assert engines == []


def test_building_with_a_fresh_sqlite_url_creates_no_file_until_start_up(tmp_path: Path) -> None:
    """Migration is start-up's step (the lifespan, or ``Clarion.upgrade``), never building's."""
    database = tmp_path / "fresh.db"
    clarion = build_clarion(Settings(database_url=f"sqlite:///{database}"))
    try:
        assert list(tmp_path.iterdir()) == []
        with TestClient(clarion.asgi_app, base_url="http://127.0.0.1") as client:
            assert database.exists()
            assert "alembic_version" in sqlalchemy.inspect(clarion.engine).get_table_names()
            assert client.get("/api/v1/workspaces").status_code == 200
    finally:
        clarion.close()


def test_the_engine_created_for_a_database_url_is_the_one_counted(
    tmp_path: Path, engines: list[object]
) -> None:
    """The fixture above sees engines Clarion creates (so its empty list means something)."""
    clarion = build_clarion(Settings(database_url=f"sqlite:///{tmp_path / 'q.db'}"))
    try:
        assert clarion.engine in engines
    finally:
        clarion.close()


def test_injected_sql_storage_is_migrated_by_the_lifespan_not_by_building(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'q.db'}")
    clock, ids = ManualClock(), UuidIds()
    clarion = build_clarion(
        Settings(database_url="memory://"), storage=Storage.sql(engine, clock, ids), clock=clock
    )
    try:
        assert sqlalchemy.inspect(engine).get_table_names() == []
        with TestClient(clarion.asgi_app, base_url="http://127.0.0.1") as client:
            assert "alembic_version" in sqlalchemy.inspect(engine).get_table_names()
            assert client.get("/api/v1/workspaces").status_code == 200
    finally:
        clarion.close()


@pytest.mark.anyio
async def test_injected_empty_waiters_are_used_not_replaced() -> None:
    """An empty ``InMemoryWaiters`` is falsy (it has ``__len__``); it is still the one used:
    the live entry a new bundle gets, and a cancel removes, is in the injected waiters."""
    waiters = InMemoryWaiters()
    assert not waiters
    clarion = build_clarion(Settings(database_url="memory://"), waiters=waiters)
    services, me = clarion.services, Identity.internal()
    task = await services.host.create_task(me, "t")
    created = await services.host.create_session(me, task.id)
    draft = QuestionDraft(prompt="Which?", options=(OptionDraft("a", "A"), OptionDraft("b", "B")))
    pending_id = await services.asking.create(me, created.session.id, [draft], "")
    assert waiters.has_entry(pending_id)
    assert (await services.requests.get_request(me, pending_id)).pending_id == pending_id
    await services.requests.cancel(me, pending_id)
    assert not waiters.has_entry(pending_id)
    with pytest.raises(NotFound):
        await services.requests.get_request(me, pending_id)
