"""Lookups and listing cost what the pending work costs, not what the history costs: the
plans the databases choose never scan ``task_session_messages`` (beyond the partial index of
pending rows), proved with EXPLAIN on both databases."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from clarion.adapters.sql import SqlAskRecords, SqlNotificationStore
from clarion.adapters.system import UuidIds
from clarion.domain.approvals import Candidates
from clarion.domain.asks import AskProbe, retry_key
from clarion.domain.history import ResolvedQuery
from clarion.domain.listing import ListQuery, Visibility
from clarion.domain.model import ANSWERED
from clarion.domain.notifications import ANSWERABLE, DONE, RESOLVED, NewEntry
from clarion.ports.testing import ContractWorld
from clarion.ports.testing.approvals import ask_approval, vote, voter
from clarion.ports.testing.asks import ask_record
from clarion.ports.testing.world import answers_for, sample_questions
from tests.integration.sql.support import (
    add_finished_outbox_history,
    add_resolved_history,
    add_sessions,
    sql_world,
)

HISTORY_BUNDLES = 3000
# The partial indexes over pending clarification rows only, and over the rows still carrying
# notification events the outbox has not taken: reading all of one is reading the pending
# work, never the history.
PARTIAL_INDEXES = (
    "ix_task_session_messages_pending_rows",
    "ix_task_session_messages_pending_order",
    "ix_task_session_messages_pending_asker",
    "ix_task_session_messages_unannounced",
    "ix_task_session_messages_in_delivery",
)
# Every alias the repositories give task_session_messages.
_SQLITE_MESSAGE_SCAN = re.compile(
    r"^SCAN (task_session_messages(_\d+)?|act|pending|msg|head|earlier|qrow|trow|vrow"
    r"|ask_marked|ask_any|ask_closing)\b"
)

Statement = tuple[str, Any]


def _captured(engine: Engine, action: Callable[[], object]) -> list[Statement]:
    statements: list[Statement] = []

    def capture(_c: Any, _cur: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "UPDATE", "WITH", "DELETE")):
            statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        action()
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert statements
    return statements


def _sqlite_plan(engine: Engine, statement: Statement) -> list[str]:
    """The details of SQLite's ``EXPLAIN QUERY PLAN``, one per step."""
    sql, parameters = statement
    with engine.connect() as connection:
        return [
            row[3] for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
        ]


def _sqlite_scans(engine: Engine, statement: Statement) -> list[str]:
    return [
        detail
        for detail in _sqlite_plan(engine, statement)
        if _SQLITE_MESSAGE_SCAN.match(detail)
        and not any(index in detail for index in PARTIAL_INDEXES)
    ]


def _plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _plan_nodes(child)


def _postgres_plan(engine: Engine, statement: Statement) -> list[dict[str, Any]]:
    """Every node of PostgreSQL's plan."""
    sql, parameters = statement
    with engine.connect() as connection:
        raw = connection.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {sql}", parameters).scalar()
        connection.rollback()
    plan = raw if isinstance(raw, list) else json.loads(str(raw))
    return list(_plan_nodes(plan[0]["Plan"]))


def _postgres_scans(engine: Engine, statement: Statement) -> list[str]:
    full_scans = []
    for node in _postgres_plan(engine, statement):
        on_messages = node.get("Relation Name") == "task_session_messages"
        if on_messages and node["Node Type"] == "Seq Scan":
            full_scans.append(f"Seq Scan on {node.get('Alias')}")
        index = node.get("Index Name", "")
        partial = index in PARTIAL_INDEXES
        if (
            index.startswith("ix_task_session_messages")
            and not partial
            and "Index Cond" not in node
        ):
            full_scans.append(f"{node['Node Type']} of all of {index}")
    return full_scans


def _full_scans(engine: Engine, statements: list[Statement]) -> list[str]:
    explain = _sqlite_scans if engine.dialect.name == "sqlite" else _postgres_scans
    return [scan for statement in statements for scan in explain(engine, statement)]


@pytest.fixture(name="world")
def fixture_world(engine: Engine) -> ContractWorld:
    """A few pending bundles on top of thousands of resolved history rows."""
    world = sql_world(engine)
    for n in range(5):
        world.bundle_in_new_session(f"p-{n}", questions=2)
    add_resolved_history(engine, world, HISTORY_BUNDLES)
    return world


def test_loading_a_bundle_by_pending_id_never_scans_the_messages(
    engine: Engine, world: ContractWorld
) -> None:
    statements = _captured(engine, lambda: world.claims.load_bundle("p-1"))
    assert _full_scans(engine, statements) == []


def _reads_beyond_keys(engine: Engine, statements: list[Statement], table: str) -> list[str]:
    """The plans' reads of ``table`` that are not a probe by key (SQLite: a ``SCAN`` of it,
    under any alias; PostgreSQL: a sequential scan, or an index scan with no condition)."""
    if engine.dialect.name == "sqlite":
        aliases = {"task_sessions": "task_sessions|bundle_session"}.get(table, table)
        scan = re.compile(rf"^SCAN ({aliases})\b")
        return [d for s in statements for d in _sqlite_plan(engine, s) if scan.match(d)]
    return [
        f"{node['Node Type']} on {node.get('Alias')}"
        for s in statements
        for node in _postgres_plan(engine, s)
        if node.get("Relation Name") == table
        and (
            node["Node Type"] == "Seq Scan"
            or (node["Node Type"] in ("Index Scan", "Index Only Scan") and "Index Cond" not in node)
        )
    ]


@pytest.mark.parametrize("sessions", [400, 3000])
def test_loading_a_bundle_probes_its_session_by_key(
    engine: Engine, world: ContractWorld, sessions: int
) -> None:
    """Issue #35, tenth pass: among hundreds or thousands of sessions, a bundle's read finds
    its session's task with a probe by key. Joined, PostgreSQL read the whole sessions table
    or walked its primary key up to the bundle's session (a hash or a merge join) at a few
    hundred sessions, in every load. (With a hundred, a page or two, it may read them all:
    cheaper than a probe.)"""
    add_sessions(engine, world, sessions)
    visible = Visibility.owned_by("alice")
    statements = _captured(
        engine,
        lambda: (world.claims.load_bundle("p-1"), world.claims.load_visible_bundle("p-1", visible)),
    )
    assert len(statements) == 2
    assert _reads_beyond_keys(engine, statements, "task_sessions") == []
    bundle = world.claims.load_bundle("p-1")
    assert bundle is not None
    session = world.host.get_session(bundle.rows[0].session_id)
    assert session is not None
    assert bundle.task_id == session.task_id


def test_loading_a_visible_bundle_never_scans_the_messages(
    engine: Engine, world: ContractWorld
) -> None:
    """Issue #14: the visibility verdict inside the read probes the bundle's rows by pending id
    and the task and workspace by key."""
    owner = world.workspace("mine", owner_id="alice")
    world.bundle_in_new_session("p-mine", workspace_id=owner.id)

    def reads() -> None:
        for visibility in (Visibility.owned_by("alice"), Visibility.owned_by("bob")):
            world.claims.load_visible_bundle("p-mine", visibility)
            world.claims.load_visible_bundle("never-issued", visibility)
        world.claims.load_visible_bundle("p-mine", Visibility.only({owner.id}))

    statements = _captured(engine, reads)
    assert len(statements) == 5
    assert _full_scans(engine, statements) == []


def test_returning_an_ask_probes_its_earlier_asks_bundles_by_pending_id(
    engine: Engine, world: ContractWorld
) -> None:
    """Issue #35: the earlier asks an answered call may hand over are told from those still
    waiting by probes of each one's bundle, never a read of the message history."""
    records = SqlAskRecords(engine)
    for n in range(5):
        key = retry_key("", {"n": n})
        records.reserve(ask_record(f"a-{n}", key=key, minutes=n, pending_id=f"p-{n}"))
    world.host.start_turn(world.bundle("p-3").rows[0].session_id)  # p-3 no longer waits
    statements = _captured(engine, lambda: records.returned("a-0", 20))
    assert [record.id for record in records.returned("a-1", 20) or ()] == ["a-3"]
    assert _full_scans(engine, statements) == []


def test_a_tasks_get_probe_reads_its_bundle_by_pending_id(
    engine: Engine, world: ContractWorld
) -> None:
    """Issue #35: a poll's probe tells a waiting ask from one that may be settled by the same
    probes of its bundle, never a read of the message history."""
    records = SqlAskRecords(engine)
    records.reserve(ask_record("a-2", minutes=2, pending_id="p-2"))
    records.reserve(ask_record("a-3", key=retry_key("", {"n": 3}), pending_id="p-3"))
    world.host.start_turn(world.bundle("p-3").rows[0].session_id)  # p-3 no longer waits
    probes: list[AskProbe | None] = []
    statements = _captured(engine, lambda: probes.extend(map(records.probe, ("a-2", "a-3"))))
    assert [probe.waits for probe in probes if probe is not None] == [True, False]
    assert _full_scans(engine, statements) == []


def test_the_claim_never_scans_the_messages(engine: Engine, world: ContractWorld) -> None:
    answers = answers_for(world.bundle("p-2"))

    def claim_and_lose() -> None:
        assert world.claims.complete_active_bundle("p-2", ANSWERED, answers).claimed
        assert not world.claims.complete_active_bundle("p-2", ANSWERED, answers).claimed

    statements = _captured(engine, claim_and_lose)
    assert _full_scans(engine, statements) == []


def test_taking_the_notification_events_reads_only_the_marked_rows(
    engine: Engine, world: ContractWorld
) -> None:
    """The worker's round, the history taken long ago: its cost follows the events not yet
    taken (the claim below, and the five bundles asked), never the history."""
    assert world.claims.complete_active_bundle(
        "p-3", ANSWERED, answers_for(world.bundle("p-3"))
    ).claimed
    store = SqlNotificationStore(engine, world.clock, UuidIds())
    statements = _captured(engine, lambda: store.claim_due(world.clock.peek(), limit=5, lease_s=60))
    assert _full_scans(engine, statements) == []
    assert [e.event for e in store.entries("p-3")] == [ANSWERABLE, RESOLVED]


def test_finishing_an_event_takes_its_deliveries_back_by_key(
    engine: Engine, world: ContractWorld
) -> None:
    """Issue #35, tenth pass: the worker finishing an event reads the deliveries it just
    recorded by their ids, never the outbox's history (kept for days: a read by lease token,
    which has no index, read all of it on every event)."""
    add_finished_outbox_history(engine, world, 2000)
    assert world.claims.complete_active_bundle(
        "p-3", ANSWERED, answers_for(world.bundle("p-3"))
    ).claimed
    store = SqlNotificationStore(engine, world.clock, UuidIds())
    now = world.clock.peek()
    event = store.claim_due(now, limit=1, lease_s=60)[0]
    delivery = NewEntry(
        pending_id=event.pending_id,
        event=event.event,
        due_at=now,
        idempotency_key=f"{event.idempotency_key}:r",
        route_id="r",
        origin_key=event.idempotency_key,
    )
    taken: list[Any] = []

    def finish() -> None:
        taken.append(
            store.finish_and_take(
                event.id, event.lease_token, DONE, follow_ups=[delivery], now=now, lease_s=60
            )
        )

    statements = _captured(engine, finish)
    assert [(e.idempotency_key, bool(e.lease_token)) for e in taken[0]] == [
        (delivery.idempotency_key, True)
    ]
    assert _reads_beyond_keys(engine, statements, "notification_outbox") == []


def test_the_outbox_purge_reads_only_what_it_deletes(engine: Engine, world: ContractWorld) -> None:
    """Issue #35, tenth pass: the worker purges finished entries past the retention on every
    quiet round, on every replica; it reads them by creation time, never the outbox's history
    (kept for days)."""
    add_finished_outbox_history(engine, world, 2000)
    store = SqlNotificationStore(engine, world.clock, UuidIds())
    week_ago = world.clock.peek() - timedelta(days=7)
    purged: list[int] = []
    statements = _captured(engine, lambda: purged.append(store.purge_finished(week_ago)))
    assert purged == [0]
    assert _reads_beyond_keys(engine, statements, "notification_outbox") == []


def test_a_recovery_round_reads_only_the_rows_in_delivery(
    engine: Engine, world: ContractWorld
) -> None:
    """#28 item 4: recovery runs every few seconds on PostgreSQL, so a round — nothing to do,
    or a young delivery by a live process left alone — reads the partial index over rows in
    delivery, never the history."""
    assert world.replica is not None
    live = world.replica()
    answers = answers_for(world.bundle("p-4"))
    assert live.claims.complete_active_bundle("p-4", ANSWERED, answers).claimed
    grace = world.clock.peek() - timedelta(seconds=120)
    statements = _captured(engine, lambda: world.claims.reconcile_undelivered(grace))
    assert _full_scans(engine, statements) == []
    assert world.bundle("p-4").rows[0].delivery_pending
    live.end()


def test_listing_reads_only_the_pending_rows_index(engine: Engine, world: ContractWorld) -> None:
    """L1–L16 in one query whose cost follows the pending rows (and the page)."""
    owner = world.workspace("mine", owner_id="alice")
    world.bundle_in_new_session("p-mine", workspace_id=owner.id)
    query = ListQuery(visibility=Visibility.only({owner.id}), limit=3)
    statements = _captured(engine, lambda: world.claims.list_active_bundles(query))
    assert len(statements) == 1
    assert _full_scans(engine, statements) == []


def test_assigned_reads_and_votes_never_scan_the_messages(
    engine: Engine, world: ContractWorld
) -> None:
    """Issue #33: the assignment filter probes the candidates by key inside the list and the
    visible read, and a vote (with the claim it decides) reads one bundle by its pending id."""
    owner = world.workspace("mine", owner_id="alice")
    ask_approval(world, "a-1", candidates=Candidates(user_ids=("alice",)), workspace_id=owner.id)
    assigned = Visibility.owned_by("alice").assigned_to("alice")
    stranger = Visibility.owned_by("bob").assigned_to("bob")

    def reads() -> None:
        world.claims.list_active_bundles(ListQuery(visibility=assigned, limit=3))
        world.claims.list_active_bundles(ListQuery(visibility=stranger, limit=3))
        assert world.claims.load_visible_bundle("a-1", assigned) is not None
        assert world.claims.load_visible_bundle("a-1", stranger) is None
        assert vote(world, "a-1", voter("alice")).claim is not None

    statements = _captured(engine, reads)
    assert _full_scans(engine, statements) == []


def test_session_reads_never_scan_the_messages(engine: Engine, world: ContractWorld) -> None:
    """The workflow guard, the projection and detach read one session's pending rows."""
    session_id = world.bundle("p-3").session_id

    def session_reads() -> None:
        world.claims.active_pending_ids(session_id)
        world.claims.pending_actions_for_sessions([session_id])
        world.claims.detach_active_bundles(session_id)

    assert _full_scans(engine, _captured(engine, session_reads)) == []


def test_the_per_identity_count_never_scans_the_messages(
    engine: Engine, world: ContractWorld
) -> None:
    """Issue #14: the limit's count reads pending rows by index (by asker when scoped) and
    stops at the limit; it is one statement."""

    def counts() -> None:
        world.claims.count_active_asked("alice", 200)
        world.claims.count_active_asked(None, 200)

    statements = _captured(engine, counts)
    assert len(statements) == 2
    assert _full_scans(engine, statements) == []


def test_the_per_session_count_never_scans_the_messages(
    engine: Engine, world: ContractWorld
) -> None:
    """Issue 15: the per-session limit's count reads the session's current-turn pending rows
    by index and stops at the limit; it is one statement (it used to read every active row)."""
    session_id = world.bundle("p-4").session_id
    statements = _captured(engine, lambda: world.claims.count_active_in_session(session_id, 10))
    assert len(statements) == 1
    assert _full_scans(engine, statements) == []


def test_the_limit_check_at_create_is_one_statement_below_the_limits(
    engine: Engine, world: ContractWorld
) -> None:
    """Issues #14, #15: create's two limits are checked by one statement bounding both counts
    by pending-row index entries, never scanning the messages; the exact counts run only for
    a bound at its limit."""
    session_id = world.bundle("p-4").session_id

    def check(per_session: int, per_identity: int) -> Callable[[], object]:
        def run() -> None:
            world.claims.active_limit_reached(session_id, per_session, "alice", per_identity)
            world.claims.active_limit_reached(session_id, per_session, None, per_identity)

        return run

    below = _captured(engine, check(10, 200))
    assert len(below) == 2
    assert _full_scans(engine, below) == []
    # p-4 has two pending rows (one bundle); five two-row bundles are pending, none asked by
    # alice: each call bounds, then counts the session exactly; the unscoped one also counts
    # every active bundle exactly.
    at_limits = _captured(engine, check(2, 5))
    assert len(at_limits) == 5
    assert _full_scans(engine, at_limits) == []


def test_the_list_walks_the_pending_order_index_and_sorts_no_backlog(
    engine: Engine, world: ContractWorld
) -> None:
    """Issue 15: the page is read in L6 order from the partial index of pending rows and the
    walk stops at the limit — no sort over every pending bundle (PostgreSQL may sort rows of
    equal ``created_at`` by the bytewise pending id as it walks: an incremental sort)."""
    for n in range(40):
        world.bundle_in_new_session(f"q-{n:02d}")
    query = ListQuery(visibility=Visibility.owned_by("alice"), limit=3)
    (statement,) = _captured(engine, lambda: world.claims.list_active_bundles(query))
    sql, parameters = statement
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            plan = [
                row[3]
                for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
            ]
            assert "SCAN head USING INDEX ix_task_session_messages_pending_order" in plan
            return
        raw = connection.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {sql}", parameters).scalar()
        connection.rollback()
    tree = raw if isinstance(raw, list) else json.loads(str(raw))
    nodes = list(_plan_nodes(tree[0]["Plan"]))
    walks = [n for n in nodes if n.get("Index Name") == "ix_task_session_messages_pending_order"]
    (head,) = [n for n in walks if n["Alias"] == "head"]
    assert all("Index Cond" in n for n in walks if n is not head)  # probes, not walks
    chain = list(_main_chain(tree[0]["Plan"]))  # the plan without its per-row subplans
    limits = [n for n in chain if n["Node Type"] == "Limit"]
    assert limits
    under_limit = list(_main_chain(limits[0]))
    assert head in under_limit
    assert [n for n in under_limit if n["Node Type"] == "Sort"] == []
    # Every per-row test is a probe: no subplan of the walk is hashed over a whole table.
    assert "hashed SubPlan" not in head.get("Filter", "")


def _main_chain(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        if child.get("Parent Relationship") not in ("SubPlan", "InitPlan"):
            yield from _main_chain(child)


def test_deduplication_is_one_seek_of_the_pending_rows_index(
    engine: Engine, world: ContractWorld
) -> None:
    """Issue 15: create's duplicate lookup seeks (session, current turn, digest) rather than
    reading the session's transcript or every active bundle of it."""
    session_id = world.bundle("p-4").session_id
    statements = _captured(
        engine,
        lambda: world.claims.find_active_duplicate(session_id, sample_questions(3)),
    )
    sql, parameters = statements[0]
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            plan = " | ".join(
                row[3]
                for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
            )
            assert "ix_task_session_messages_pending_rows" in plan, plan
            assert "bundle_digest=?" in plan, plan
            return
        raw = connection.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {sql}", parameters).scalar()
        connection.rollback()
    tree = raw if isinstance(raw, list) else json.loads(str(raw))
    seeks = [
        n
        for n in _main_chain(tree[0]["Plan"])
        if n.get("Index Name") == "ix_task_session_messages_pending_rows"
    ]
    assert seeks, tree
    assert "bundle_digest" in seeks[0].get("Index Cond", ""), seeks[0]


def test_the_resolved_list_walks_the_resolved_order_index_and_sorts_no_history(
    engine: Engine, world: ContractWorld
) -> None:
    """Issue #20: the resolved list reads its page newest first from the partial index of
    resolved rows by resolution time and stops at the limit — no sort over the history."""
    query = ResolvedQuery(visibility=Visibility.owned_by("alice"), limit=3)
    (statement,) = _captured(engine, lambda: world.claims.list_resolved_bundles(query))
    sql, parameters = statement
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            plan = [
                row[3]
                for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
            ]
            assert "SCAN head USING INDEX ix_task_session_messages_resolved_order" in plan, plan
            return
        raw = connection.exec_driver_sql(f"EXPLAIN (FORMAT JSON) {sql}", parameters).scalar()
        connection.rollback()
    tree = raw if isinstance(raw, list) else json.loads(str(raw))
    chain = list(_main_chain(tree[0]["Plan"]))
    limits = [n for n in chain if n["Node Type"] == "Limit"]
    assert limits
    under_limit = list(_main_chain(limits[0]))
    walks = [
        n for n in under_limit if n.get("Index Name") == "ix_task_session_messages_resolved_order"
    ]
    assert [n["Alias"] for n in walks] == ["head"]
    assert [n for n in under_limit if n["Node Type"] == "Sort"] == []


def test_the_history_with_closed_bundles_never_scans_the_messages(
    engine: Engine, world: ContractWorld
) -> None:
    """#30: with the closed bundles the history merges four walks — resolved and ended rows
    by their indexes, superseded bundles through the turns, ended sessions through theirs —
    each reading only partial indexes or probes, never the whole message history."""
    for n in range(3):
        bundle = world.bundle_in_new_session(f"gone-{n}")
        world.host.start_turn(bundle.session_id)
    query = ResolvedQuery(visibility=Visibility.owned_by("alice"), limit=3, include_closed=True)
    statements = _captured(engine, lambda: world.claims.list_resolved_bundles(query))
    walked = ("ix_task_session_messages_resolved_order", "ix_task_session_messages_ended_order")
    # Walking those two newest first, stopped by the page's LIMIT, is the point of them.
    scans = [s for s in _full_scans(engine, statements) if not any(i in s for i in walked)]
    assert scans == []
    sql, parameters = statements[-1]
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            plan = "\n".join(
                row[3]
                for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", parameters)
            )
        else:
            plan = str(connection.exec_driver_sql(f"EXPLAIN {sql}", parameters).all())
            connection.rollback()
    for index in walked:
        assert index in plan, plan
