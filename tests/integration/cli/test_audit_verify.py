"""``clarion audit verify`` and the chain fields of ``audit export`` (issue #34), end to end on
a SQLite file: the CLI reads the database the resolutions were written to."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from clarion.adapters.sql import create_engine, upgrade_database
from clarion.adapters.sql.audit import SqlAuditChain
from clarion.adapters.sql.engine import write_transaction
from clarion.adapters.sql.schema import audit_chain, messages
from clarion.app.root.cli import main
from clarion.domain.model import REJECTED
from tests.integration.sql.support import sql_world


@pytest.fixture(name="database")
def fixture_database(tmp_path: Path) -> Iterator[tuple[str, Engine]]:
    url = f"sqlite:///{tmp_path / 'audit.db'}"
    upgrade_database(url)
    engine = create_engine(url)
    try:
        yield url, engine
    finally:
        engine.dispose()


def _reject(engine: Engine, count: int, workspace_id: str = "") -> None:
    world = sql_world(engine)
    for n in range(1, count + 1):
        pending_id = f"{workspace_id}p{n}"
        world.bundle_in_new_session(pending_id, workspace_id=workspace_id)
        won = world.claims.complete_active_bundle(pending_id, REJECTED, None)
        # Settled (R9: a rejection resumes nobody), so the export lists it.
        assert world.claims.finalize_delivery(pending_id, REJECTED, won.claimed_ids)


def test_verify_reports_each_intact_chain_and_exits_zero(
    database: tuple[str, Engine], capsys: pytest.CaptureFixture[str]
) -> None:
    url, engine = database
    workspace = sql_world(engine).workspace()
    _reject(engine, 3)
    _reject(engine, 2, workspace.id)
    heads = {head.scope: head.hash for head in SqlAuditChain(engine).heads()}
    assert main(["audit", "verify", "--database-url", url]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == [
        f'workspace "": 3 records, intact, last hash {heads[""]}',
        f'workspace "{workspace.id}": 2 records, intact, last hash {heads[workspace.id]}',
    ]
    assert "verified 2 chains, 0 broken" in out.err
    assert main(["audit", "verify", "--database-url", url, "--workspace", workspace.id]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f'workspace "{workspace.id}": 2 records, intact, last hash {heads[workspace.id]}'
    ]


def test_verify_names_the_first_broken_link_and_exits_one(
    database: tuple[str, Engine], capsys: pytest.CaptureFixture[str]
) -> None:
    url, engine = database
    _reject(engine, 4)
    with write_transaction(engine) as connection:
        forged = sa.func.replace(audit_chain.c.body, "rejected", "answered")
        connection.execute(sa.update(audit_chain).where(audit_chain.c.seq == 2).values(body=forged))
    assert main(["audit", "verify", "--database-url", url]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith('workspace "": BROKEN at seq 2 (pending id "p2"): hash does not match')


def test_export_carries_each_resolution_s_chain_fields(
    database: tuple[str, Engine], capsys: pytest.CaptureFixture[str]
) -> None:
    url, engine = database
    _reject(engine, 2)
    assert main(["audit", "export", "--database-url", url]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    chains = {line["pending_id"]: line["chain"] for line in lines}
    assert chains["p1"]["seq"] == 1
    assert chains["p2"]["seq"] == 2
    assert chains["p2"]["prev_hash"] == chains["p1"]["hash"]
    assert chains["p1"]["scope"] == ""


def test_verify_with_rows_names_a_bundle_whose_rows_were_changed(
    database: tuple[str, Engine], capsys: pytest.CaptureFixture[str]
) -> None:
    url, engine = database
    _reject(engine, 2)
    with write_transaction(engine) as connection:
        p2 = messages.c.bundle_pending_id == "p2"
        connection.execute(sa.update(messages).where(p2).values(resolver_surface="slack"))
    assert main(["audit", "verify", "--database-url", url]) == 0
    capsys.readouterr()
    assert main(["audit", "verify", "--database-url", url, "--rows"]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line == (
        'workspace "": ROWS CHANGED at seq 2 (pending id "p2"): '
        "the rows' resolved_by differ from the record"
    )
