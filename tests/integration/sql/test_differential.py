"""Differential property: random worlds give the same results from the in-memory reference
and from SQL on SQLite and PostgreSQL — list pages (visibilities, workspace filters, cursor
walks), claim outcomes, transitions, guard answers, projections and transcripts.

Worlds mix workspaces with and without owners, tasks with empty and dangling workspace ids,
sessions in every state (and an unknown one), several turns, well-formed bundles created the
ordinary way, and raw legacy or malformed rows: mixed, absent, null and unknown statuses,
missing or nested-only or non-string question ids, unparseable questions, non-object
responses, truthy-string markers, empty row task ids, and pending ids shared with other
sessions, turns or message types.

Both worlds' clocks are set to the same instant before every operation (and stand still
within it), so timestamps agree however many times an implementation reads its clock; ids
come from identical counters.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

from clarion.adapters.memory import (
    InMemoryClaimRepository,
    InMemoryHostRepository,
    InMemoryStore,
    InMemoryTokenStore,
)
from clarion.domain.errors import ClaimError, NotFound
from clarion.domain.listing import ListPage, ListQuery, Visibility
from clarion.domain.model import ANSWERED, CLARIFICATION_REQUEST, REJECTED, Answer, SessionState
from clarion.ports.testing import ContractWorld, ManualClock, row_metadata
from tests.integration.sql.support import empty_database, sql_world

START = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
PENDING_IDS = ("pa", "pb", "pc", "pd", "pe")
OWNERS = ("", "alice", "bob")
STATES = (*SessionState.ALL, "PAUSED")  # an unknown state is not terminal


class CountingIds:
    """Identical id sequences in both worlds: ``id-0001``, ``id-0002``, ..."""

    def __init__(self) -> None:
        self._next = 0

    def new_id(self) -> str:
        self._next += 1
        return f"id-{self._next:04d}"


# --- the random world script ------------------------------------------------------------

_text = st.text(alphabet="abcxyz _-", max_size=6)
_json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), _text)
_status = st.sampled_from(
    ["ABSENT", None, "", "pending", "answered", "rejected", "expired", "cancelled", "weird", 5]
)
_flat_question_id = st.sampled_from(["ABSENT", "q1", "q2", "", 7])
_nested_question = st.one_of(
    st.sampled_from(["DEFAULT", "ABSENT", None, "garbage", 3]),
    st.fixed_dictionaries(
        {
            "id": st.sampled_from(["q1", "q3", "", 9]),
            "prompt": _text,
            "options": st.one_of(
                st.lists(
                    st.one_of(
                        st.fixed_dictionaries({"option_id": _text, "label": _text}), _json_scalar
                    ),
                    max_size=3,
                ),
                _json_scalar,
            ),
        }
    ),
)
_response = st.one_of(
    st.just("ABSENT"),
    _json_scalar,
    st.lists(_json_scalar, max_size=2),
    st.fixed_dictionaries(
        {
            "selected_options": st.one_of(st.lists(_text, max_size=2), _json_scalar),
            "custom_text": st.one_of(_text, _json_scalar),
        }
    ),
)
_flag = st.sampled_from(["ABSENT", True, False, "true", "1", 1, "no"])


@st.composite
def _raw_metadata(draw: st.DrawFn) -> dict[str, Any]:
    flat = draw(_flat_question_id)
    nested = draw(_nested_question)
    metadata = row_metadata(
        draw(st.sampled_from(PENDING_IDS)),
        question_id=flat if isinstance(flat, str) and flat != "ABSENT" else "q1",
        index=draw(st.sampled_from([0, 1, 2, "x", 1.5, None])),
        context=draw(_text),
    )
    if flat == "ABSENT":
        del metadata["question_id"]
    elif not isinstance(flat, str):
        metadata["question_id"] = flat
    if nested == "ABSENT":
        del metadata["question"]
    elif nested != "DEFAULT":
        metadata["question"] = nested
    status = draw(_status)
    if status == "ABSENT":
        del metadata["status"]
    else:
        metadata["status"] = status
    for key, value in (
        ("response", draw(_response)),
        ("agent_disconnected", draw(_flag)),
        ("response_delivery_pending", draw(_flag)),
    ):
        if value != "ABSENT":
            metadata[key] = value
    return metadata


_index = st.integers(0, 7)
_ask = st.tuples(st.just("ask"), _index, st.sampled_from(PENDING_IDS), st.integers(1, 3))
_row = st.tuples(
    st.just("row"),
    _index,
    st.sampled_from(["current", "current", "first"]),
    _raw_metadata(),
    st.sampled_from(["session", "session", "", "other"]),
    st.sampled_from(
        [CLARIFICATION_REQUEST, CLARIFICATION_REQUEST, CLARIFICATION_REQUEST, "message"]
    ),
)
_sibling = st.tuples(
    st.just("sibling"),
    _index,
    _raw_metadata(),
    st.sampled_from(["session", "", "other"]),
)
_claim = st.tuples(
    st.just("claim"),
    _index,
    st.sampled_from([ANSWERED, REJECTED]),
    st.sampled_from([False, False, True]),
)
_op = st.one_of(
    _ask,
    _ask,
    _ask,
    _row,
    _sibling,
    _sibling,
    _claim,
    _claim,
    _claim,
    st.tuples(st.just("detach"), _index),
    st.tuples(st.just("workspace"), st.sampled_from(OWNERS)),
    st.tuples(st.just("task"), st.sampled_from(["", "dangling", "ws"]), _index),
    st.tuples(st.just("session"), _index, st.booleans()),
    st.tuples(st.just("turn"), _index),
    st.tuples(st.just("complete_turn"), _index),
    st.tuples(st.just("state"), _index, st.sampled_from(STATES)),
    st.tuples(st.just("finalize"), _index, st.booleans()),
    st.tuples(st.just("restore"), _index, st.booleans()),
    st.tuples(st.just("expire"), _index, _index),
    st.tuples(st.just("cancel"), _index, _index),
    st.tuples(st.just("detach"), _index),
    st.tuples(st.just("reconcile")),
)


@st.composite
def _scripts(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    """A base world (workspaces, tasks, sessions) and then random operations on it."""
    base: list[tuple[Any, ...]] = [
        ("workspace", owner) for owner in draw(st.lists(st.sampled_from(OWNERS), max_size=3))
    ]
    for choice, index in draw(
        st.lists(
            st.tuples(st.sampled_from(["", "dangling", "ws", "ws"]), _index), min_size=1, max_size=3
        )
    ):
        base.append(("task", choice, index))
    for index, primary in draw(st.lists(st.tuples(_index, st.booleans()), min_size=1, max_size=4)):
        base.append(("session", index, primary))
    return base + draw(st.lists(_op, min_size=12, max_size=36))


# --- running a script on both worlds --------------------------------------------------------


def memory_world(clock: ManualClock) -> ContractWorld:
    store, ids = InMemoryStore(), CountingIds()
    return ContractWorld(
        host=InMemoryHostRepository(store, clock, ids),
        claims=InMemoryClaimRepository(store, clock, ids),
        tokens=InMemoryTokenStore(store, clock, ids),
        clock=clock,
        storage_names=store.collection_names,
    )


def outcome(action: Callable[[], Any]) -> Any:
    """A call's result, or the kind of Clarion error it raised (both must agree)."""
    try:
        return action()
    except (ClaimError, NotFound) as exc:
        return type(exc).__name__


def canonical(value: Any) -> Any:
    """A comparable form that tells ``True`` from ``1`` and ``1.0`` from ``1`` (Python's
    ``==`` does not) and ignores JSON object key order (JSONB sorts keys)."""
    if attrs.has(type(value)):
        fields = attrs.fields(type(value))
        return (type(value).__name__, tuple(canonical(getattr(value, f.name)) for f in fields))
    if isinstance(value, Mapping):
        return ("map", tuple(sorted((str(k), canonical(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return ("seq", tuple(canonical(item) for item in value))
    if isinstance(value, bool | float):
        return (type(value).__name__, value)
    return value


@attrs.define
class Pair:
    """The reference world, the SQL world, and the ids both have created so far."""

    memory: ContractWorld
    sql: ContractWorld
    workspaces: list[str] = attrs.field(factory=list)
    tasks: list[str] = attrs.field(factory=list)
    sessions: list[str] = attrs.field(factory=list)
    pending_ids: list[str] = attrs.field(factory=list)  # in first-use order
    claimed: dict[str, tuple[str, tuple[str, ...]]] = attrs.field(factory=dict)
    moment: datetime = START

    def both(self, call: Callable[[ContractWorld], Any]) -> Any:
        """Run ``call`` on both worlds at the same instant; assert equal outcomes."""
        self.moment += timedelta(milliseconds=1)
        for world in (self.memory, self.sql):
            world.clock.set(self.moment, step=timedelta(0))
        expected = outcome(lambda: call(self.memory))
        actual = outcome(lambda: call(self.sql))
        assert canonical(actual) == canonical(expected)
        return expected

    def pick(self, items: list[str], index: int) -> str | None:
        return items[index % len(items)] if items else None

    def use(self, pending_id: str) -> None:
        if pending_id not in self.pending_ids:
            self.pending_ids.append(pending_id)


def run_op(pair: Pair, op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "workspace":
        workspace = pair.both(lambda w: w.host.create_workspace("ws", op[1]))
        pair.workspaces.append(workspace.id)
    elif kind == "task":
        choice = op[1]
        workspace_id = choice if choice != "ws" else pair.pick(pair.workspaces, op[2]) or ""
        pair.tasks.append(pair.both(lambda w: w.host.create_task("t", workspace_id)).id)
    elif kind == "session" and pair.tasks:
        task_id = pair.pick(pair.tasks, op[1])
        assert task_id is not None
        session, _ = pair.both(lambda w: w.host.create_session(task_id, is_primary=op[2]))
        pair.sessions.append(session.id)
    elif kind in ("turn", "complete_turn", "state", "detach", "ask", "row", "expire", "cancel"):
        session_id = pair.pick(pair.sessions, op[1])
        if session_id is not None:
            run_session_op(pair, session_id, op)
    elif kind == "sibling":
        run_sibling(pair, op)
    elif kind == "claim":
        run_claim(pair, pair.pick(pair.pending_ids, op[1]) or "none", op[2], drop_one=op[3])
    elif kind in ("finalize", "restore"):
        pending_id, exact = pair.pick(pair.pending_ids, op[1]) or "none", op[2]
        terminal, ids = pair.claimed.get(pending_id, (ANSWERED, ()))
        wanted = ids if exact else (*ids, *ids[:1])
        if kind == "finalize":
            pair.both(lambda w: w.claims.finalize_delivery(pending_id, terminal, wanted))
        else:
            pair.both(lambda w: w.claims.restore_active_bundle(pending_id, terminal, wanted))
    elif kind == "reconcile":
        pair.both(lambda w: w.claims.reconcile_undelivered())


def run_session_op(pair: Pair, session_id: str, op: tuple[Any, ...]) -> None:
    kind = op[0]
    if kind == "turn":
        pair.both(lambda w: w.host.start_turn(session_id))
    elif kind == "complete_turn":
        pair.both(lambda w: w.host.complete_current_turn(session_id))
    elif kind == "state":
        pair.both(lambda w: w.host.set_session_state(session_id, op[2]))
    elif kind == "detach":
        pair.both(lambda w: w.claims.detach_active_bundles(session_id))
    elif kind in ("expire", "cancel"):
        pending_id = pair.pick(pair.pending_ids, op[2]) or "none"
        if kind == "expire":
            pair.both(lambda w: w.claims.expire_active_bundle(session_id, pending_id))
        else:
            pair.both(lambda w: w.claims.cancel_active_bundle(session_id, pending_id))
    elif kind == "ask":
        pair.use(op[2])
        pair.both(lambda w: w.ask(session_id, op[2], questions=op[3]))
    elif kind == "row":
        _, _, turn_choice, metadata, task_choice, message_type = op
        turn_id = _turn_for(pair, session_id, turn_choice)
        task_id = {"session": None, "": "", "other": "task-elsewhere"}[task_choice]
        if isinstance(metadata.get("pending_id"), str):
            pair.use(metadata["pending_id"])
        pair.both(
            lambda w: w.raw_row(
                session_id, metadata, turn_id=turn_id, task_id=task_id, type=message_type
            )
        )


def _turn_for(pair: Pair, session_id: str, choice: str) -> str | None:
    """The session's current turn, or its first one (an older turn once newer ones exist)."""
    if choice == "current":
        return None
    messages = pair.memory.host.list_messages(session_id)
    current = pair.memory.host.current_turn(session_id)
    turns = {m.turn_id for m in messages}
    return min(turns) if turns else (current.id if current else None)


def run_sibling(pair: Pair, op: tuple[Any, ...]) -> None:
    """A raw row joining an existing bundle on its session's current turn (legacy mixes)."""
    _, index, metadata, task_choice = op
    pending_id = pair.pick(pair.pending_ids, index)
    bundle = pair.memory.claims.load_bundle(pending_id) if pending_id else None
    if pending_id is None or bundle is None:
        return
    session_id = bundle.session_id
    task_id = {"session": None, "": "", "other": "task-elsewhere"}[task_choice]
    joined = {**metadata, "pending_id": pending_id}
    pair.both(lambda w: w.raw_row(session_id, joined, task_id=task_id))


def run_claim(pair: Pair, pending_id: str, terminal: str, *, drop_one: bool) -> None:
    bundle = pair.memory.claims.load_bundle(pending_id)
    responses: dict[str, Answer] | None = None
    if terminal == ANSWERED:
        rows = bundle.rows if bundle is not None else ()
        responses = {
            row.question_id: Answer(
                question_id=row.question_id,
                selected_options=row.question.option_ids()[:1] if row.question else (),
                custom_text="because",
            )
            for row in rows
            if row.question_id
        }
        if drop_one and responses:
            responses.pop(sorted(responses)[0])
    result = pair.both(lambda w: w.claims.complete_active_bundle(pending_id, terminal, responses))
    if not isinstance(result, str) and result.claimed:
        pair.claimed[pending_id] = (terminal, result.claimed_ids)


# --- what both worlds must agree on ---------------------------------------------------------


def _walk(world: ContractWorld, query: ListQuery) -> list[ListPage]:
    """Every page of a cursor walk (L9) with ``query``'s limit."""
    pages = [world.claims.list_active_bundles(query)]
    while pages[-1].has_more and len(pages) < 20:
        last = pages[-1].bundles[-1]
        pages.append(
            world.claims.list_active_bundles(
                attrs.evolve(query, after=(last.created_at, last.pending_id))
            )
        )
    return pages


def _bundle_reader(pending_id: str) -> Callable[[ContractWorld], Any]:
    return lambda world: world.claims.load_bundle(pending_id)


def _session_readers(session_id: str) -> list[Callable[[ContractWorld], Any]]:
    return [
        lambda world: world.claims.active_pending_ids(session_id),
        lambda world: world.claims.session_has_active_bundle(session_id),
        lambda world: world.host.list_messages(session_id),
        lambda world: world.host.current_turn(session_id),
    ]


def observe(pair: Pair) -> None:
    """Compare every read both worlds offer."""
    everyone = Visibility.everything()
    visibilities = [
        everyone,
        Visibility.only(()),
        Visibility.only(pair.workspaces[:1]),
        Visibility.only(pair.workspaces),
    ]
    filters = ["", "dangling", *pair.workspaces[:2]]
    for visibility in visibilities:
        for workspace_id in filters:
            for limit in (1, 2, 50):
                query = ListQuery(visibility=visibility, limit=limit, workspace_id=workspace_id)
                pair.both(functools.partial(_walk, query=query))
    since = START + timedelta(milliseconds=5)
    pair.both(
        lambda w: w.claims.list_active_bundles(
            ListQuery(visibility=everyone, limit=2, created_since=since)
        )
    )
    for pending_id in PENDING_IDS:
        pair.both(_bundle_reader(pending_id))
    for session_id in pair.sessions:
        for read in _session_readers(session_id):
            pair.both(read)
    pair.both(lambda w: w.claims.pending_actions_for_sessions([*pair.sessions, "missing"]))
    pair.both(lambda w: w.host.sessions_for_tasks(pair.tasks))
    pair.both(lambda w: w.host.list_tasks())


def check_script(engine: Engine, script: list[tuple[Any, ...]]) -> None:
    empty_database(engine)
    pair = Pair(
        memory=memory_world(ManualClock(START)),
        sql=sql_world(engine, clock=ManualClock(START), ids=CountingIds()),
    )
    for op in script:
        run_op(pair, op)
    observe(pair)


_SETTINGS = {
    "deadline": None,
    "derandomize": True,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}


@settings(max_examples=25, **_SETTINGS)  # type: ignore[arg-type]
@given(script=_scripts())
def test_sqlite_agrees_with_the_in_memory_reference(
    sqlite_engine: Engine, script: list[tuple[Any, ...]]
) -> None:
    check_script(sqlite_engine, script)


@pytest.mark.postgres
@settings(max_examples=10, **_SETTINGS)  # type: ignore[arg-type]
@given(script=_scripts())
def test_postgresql_agrees_with_the_in_memory_reference(
    postgres_engine: Engine, script: list[tuple[Any, ...]]
) -> None:
    check_script(postgres_engine, script)
