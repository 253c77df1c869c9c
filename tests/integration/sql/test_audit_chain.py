"""The audit chain against tampering with raw SQL, and migration ``0019_audit_chain``'s backfill
(issue #34), on SQLite and PostgreSQL.

Each tampering test resolves a few bundles through the repository, then changes, removes or
reorders records behind its back, and checks that ``audit verify`` (the use case the CLI runs)
names the first broken link: its seq and the pending id found there."""

from __future__ import annotations

import json
import multiprocessing
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from clarion.adapters.sql import (
    SqlClaimRepository,
    SqlHostRepository,
    SqlTokenStore,
    create_engine,
    upgrade_database,
)
from clarion.adapters.sql.audit import SqlAuditChain
from clarion.adapters.sql.engine import write_transaction
from clarion.adapters.sql.schema import audit_chain, audit_heads, messages
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.usecases.audit import AuditLog
from clarion.domain.audit_chain import ChainReport, link_hash, resolution_body
from clarion.domain.model import ANSWERED, REJECTED, Identity
from clarion.domain.resolved_by import ResolvedBy, Surface
from clarion.ports.testing import ContractWorld, ManualClock
from clarion.ports.testing.world import answers_for
from tests.integration.sql.revisions import BACKENDS, engine_at_revision
from tests.integration.sql.support import sql_world

RESOLVED = 6
PROCESSES = 3
RACED = 24  # bundles every process tries to claim, in its own order


def _resolve_several(world: ContractWorld, workspace_id: str = "") -> list[str]:
    """``RESOLVED`` bundles in ``workspace_id``, answered and rejected in turn; their ids in
    resolution order (seq 1, 2, …)."""
    names = []
    for n in range(1, RESOLVED + 1):
        bundle = world.bundle_in_new_session(f"p{n}", workspace_id=workspace_id)
        if n % 2:
            result = world.claims.complete_active_bundle(f"p{n}", ANSWERED, answers_for(bundle))
        else:
            result = world.claims.complete_active_bundle(f"p{n}", REJECTED, None)
        assert result.claimed
        names.append(f"p{n}")
    return names


def _only(engine: Engine) -> ChainReport:
    (report,) = AuditLog(SqlAuditChain(engine)).verify()
    return report


def _tamper(engine: Engine, *statements: sa.Executable) -> None:
    with write_transaction(engine) as connection:
        for statement in statements:
            connection.execute(statement)


def _at(seq: int) -> sa.ColumnElement[bool]:
    return audit_chain.c.seq == seq


def test_an_untouched_chain_verifies(engine: Engine) -> None:
    world = sql_world(engine)
    _resolve_several(world)
    report = _only(engine)
    assert report.intact
    assert report.records == RESOLVED


def test_a_changed_record_breaks_the_chain_at_that_row(engine: Engine) -> None:
    """Someone rewrites who resolved p3 (seq 3) in place: verify names seq 3 and p3."""
    world = sql_world(engine)
    _resolve_several(world)
    forged = sa.func.replace(audit_chain.c.body, '"kind":"unknown"', '"kind":"user"')
    _tamper(engine, sa.update(audit_chain).where(_at(3)).values(body=forged))
    report = _only(engine)
    assert report.broken is not None
    assert (report.broken.seq, report.broken.pending_id) == (3, "p3")
    assert "changed" in report.broken.reason


def test_a_changed_record_with_its_hash_recomputed_breaks_the_next_link(engine: Engine) -> None:
    """A forger who also recomputes the edited record's hash breaks the link after it."""
    world = sql_world(engine)
    _resolve_several(world)
    records = list(SqlAuditChain(engine).records(""))
    body = records[2].body.replace('"status":"answered"', '"status":"rejected"')
    forged = {"body": body, "hash": link_hash(records[2].prev_hash, body)}
    _tamper(engine, sa.update(audit_chain).where(_at(3)).values(**forged))
    report = _only(engine)
    assert report.broken is not None
    assert (report.broken.seq, report.broken.pending_id) == (4, "p4")


def test_a_removed_record_breaks_the_chain_where_it_was(engine: Engine) -> None:
    world = sql_world(engine)
    _resolve_several(world)
    _tamper(engine, sa.delete(audit_chain).where(_at(3)))
    report = _only(engine)
    assert report.broken is not None
    # Seq 3 is missing: the record found in its place is p4's.
    assert (report.broken.seq, report.broken.pending_id) == (3, "p4")
    assert "removed" in report.broken.reason


def test_a_removed_last_record_is_found_by_the_head(engine: Engine) -> None:
    world = sql_world(engine)
    _resolve_several(world)
    _tamper(engine, sa.delete(audit_chain).where(_at(RESOLVED)))
    report = _only(engine)
    assert report.broken is not None
    assert report.broken.seq == RESOLVED
    assert "head" in report.broken.reason


def test_two_swapped_records_break_the_chain_at_the_first(engine: Engine) -> None:
    """p2 and p3 trade places (their seq swapped): verify names seq 2, where p3 now is."""
    world = sql_world(engine)
    _resolve_several(world)
    _tamper(
        engine,
        sa.update(audit_chain).where(_at(2)).values(seq=-2),
        sa.update(audit_chain).where(_at(3)).values(seq=2),
        sa.update(audit_chain).where(_at(-2)).values(seq=3),
    )
    report = _only(engine)
    assert report.broken is not None
    assert (report.broken.seq, report.broken.pending_id) == (2, "p3")


def test_a_record_moved_to_another_bundle_breaks_the_chain(engine: Engine) -> None:
    world = sql_world(engine)
    _resolve_several(world)
    _tamper(engine, sa.update(audit_chain).where(_at(5)).values(pending_id="p-other"))
    report = _only(engine)
    assert report.broken is not None
    assert (report.broken.seq, report.broken.pending_id) == (5, "p-other")


def _rows_report(engine: Engine) -> ChainReport:
    (report,) = AuditLog(SqlAuditChain(engine)).verify(rows=True)
    return report


def test_rows_that_still_show_their_records_verify(engine: Engine) -> None:
    """``verify --rows`` on untouched data: answers, rejections, a restore and a claim after it."""
    world = sql_world(engine)
    _resolve_several(world)
    world.bundle_in_new_session("again")
    won = world.claims.complete_active_bundle("again", REJECTED, None)
    assert world.claims.restore_active_bundle("again", REJECTED, won.claimed_ids)
    world.bundle_in_new_session("restored")
    won = world.claims.complete_active_bundle("restored", REJECTED, None)
    assert world.claims.restore_active_bundle("restored", REJECTED, won.claimed_ids)
    assert world.claims.complete_active_bundle("again", REJECTED, None).claimed
    report = _rows_report(engine)
    assert report.intact, report
    assert report.records == RESOLVED + 5  # again: 3 records, restored: 2


def test_a_changed_resolver_on_the_rows_is_named_with_rows(engine: Engine) -> None:
    """The chain is untouched but someone rewrote who resolved p3 on its rows: the chain alone
    verifies; with the rows, verify names p3 and what differs."""
    world = sql_world(engine)
    _resolve_several(world)
    p3 = messages.c.bundle_pending_id == "p3"
    _tamper(engine, sa.update(messages).where(p3).values(resolver_name="Mallory"))
    assert _only(engine).intact
    report = _rows_report(engine)
    assert report.rows_changed is not None
    assert (report.rows_changed.seq, report.rows_changed.pending_id) == (3, "p3")
    assert "resolved_by" in report.rows_changed.reason


def test_removed_rows_are_named_with_rows(engine: Engine) -> None:
    world = sql_world(engine)
    _resolve_several(world)
    _tamper(engine, sa.delete(messages).where(messages.c.bundle_pending_id == "p2"))
    report = _rows_report(engine)
    assert report.rows_changed is not None
    assert (report.rows_changed.seq, report.rows_changed.pending_id) == (2, "p2")


def test_a_workspace_is_verified_alone(engine: Engine) -> None:
    world = sql_world(engine)
    workspace = world.workspace()
    _resolve_several(world, workspace.id)
    _tamper(engine, sa.delete(audit_heads))
    log = AuditLog(SqlAuditChain(engine))
    (report,) = log.verify(workspace.id)
    assert report.broken is not None  # the head is gone, its records still are checked
    assert [r.scope for r in log.verify()] == [workspace.id]
    (empty,) = log.verify("no-such-workspace")
    assert empty.intact
    assert empty.records == 0


def _claim_all_in_process(url: str, names: list[str], seed: int, barrier: Any, out: Any) -> None:
    """One serving process: claim every bundle of ``names`` (in an order of its own), as fast
    as it can; report how many it won."""
    engine = create_engine(url)
    try:
        claims = SqlClaimRepository(engine, SystemClock(), UuidIds())
        order = list(names)
        random.Random(seed).shuffle(order)
        barrier.wait(timeout=60)
        won = sum(claims.complete_active_bundle(n, REJECTED, None).claimed for n in order)
        out.put(won)
    finally:
        engine.dispose()


@pytest.mark.server
@pytest.mark.postgres
def test_three_processes_claiming_at_once_leave_one_unbroken_chain(
    postgres_engine: Engine,
) -> None:
    """Issue #34: three processes race for the same bundles in one workspace (and some in
    another); every bundle has one winner and each workspace one linear chain — seq 1..n,
    no two records with the same prev_hash, every link verified."""
    world = sql_world(postgres_engine)
    workspace = world.workspace()
    names = [f"w{n}" for n in range(RACED)]
    for name in names:
        world.bundle_in_new_session(name, workspace_id=workspace.id)
    others = [f"o{n}" for n in range(RACED // 4)]
    for name in others:
        world.bundle_in_new_session(name)
    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(PROCESSES), context.Queue()
    url = postgres_engine.url.render_as_string(hide_password=False)
    processes = [
        context.Process(
            target=_claim_all_in_process, args=(url, names + others, seed, barrier, out)
        )
        for seed in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [process.exitcode for process in processes] == [0] * PROCESSES
    assert sum(out.get(timeout=10) for _ in range(PROCESSES)) == len(names) + len(others)
    chain = SqlAuditChain(postgres_engine)
    for scope, expected in ((workspace.id, names), ("", others)):
        records = list(chain.records(scope))
        assert [r.seq for r in records] == list(range(1, len(expected) + 1))
        assert sorted(r.pending_id for r in records) == sorted(expected)
        assert len({r.prev_hash for r in records}) == len(records)
    reports = AuditLog(chain).verify()
    assert [(r.scope, r.records, r.intact) for r in reports] == [
        ("", len(others), True),
        (workspace.id, len(names), True),
    ]


# -- migration 0019_audit_chain: the backfill ---------------------------------------------


@pytest.fixture(name="old_engine", params=BACKENDS)
def fixture_old_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A database migrated to ``0018_approvals``, the revision before."""
    with engine_at_revision(request, tmp_path, "0018_approvals") as engine:
        yield engine


def test_the_migration_chains_every_bundle_resolved_before_it(old_engine: Engine) -> None:
    """Resolution order, one chain per workspace, who resolved as recorded, and the record a
    claim would have written (plus ``backfilled``); a claim afterwards continues the chain."""
    clock, ids = ManualClock(), UuidIds()
    host = SqlHostRepository(old_engine, clock, ids)
    # No chain to write to at 0017: the repository writes none (as the code of then).
    old_claims = SqlClaimRepository(old_engine, clock, ids, audit_chain=False)
    tokens = SqlTokenStore(old_engine, clock, ids)
    world = ContractWorld(
        host=host, claims=old_claims, tokens=tokens, clock=clock, storage_names=lambda: ()
    )
    workspace = world.workspace()
    who = ResolvedBy.of(Identity(user_id="u1", display_name="Ann"), Surface.SLACK)
    later = world.bundle_in_new_session("later", workspace_id=workspace.id)
    first = world.bundle_in_new_session("first", workspace_id=workspace.id)
    world.bundle_in_new_session("elsewhere")
    world.bundle_in_new_session("open", workspace_id=workspace.id)  # never resolved
    first_claim = old_claims.complete_active_bundle(
        "first", ANSWERED, answers_for(first), resolved_by=who
    )
    assert old_claims.complete_active_bundle("elsewhere", REJECTED, None).claimed
    assert old_claims.complete_active_bundle("later", ANSWERED, answers_for(later)).claimed

    upgrade_database(old_engine)

    chain = SqlAuditChain(old_engine)
    records = list(chain.records(workspace.id))
    assert [r.pending_id for r in records] == ["first", "later"]
    assert [r.pending_id for r in chain.records("")] == ["elsewhere"]
    body = json.loads(records[0].body)
    assert body.pop("backfilled") is True
    assert first_claim.responded_at is not None
    live = resolution_body("first", ANSWERED, answers_for(first), who, first_claim.responded_at)
    assert body == json.loads(live)
    claims = SqlClaimRepository(old_engine, clock, ids)
    assert claims.complete_active_bundle("open", REJECTED, None).claimed
    assert [r.seq for r in chain.records(workspace.id)] == [1, 2, 3]
    assert all(report.intact for report in AuditLog(chain).verify(rows=True))
