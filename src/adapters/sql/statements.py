"""The claim repository's statements, built once and executed with bound values.

Each guard names one transition's whole condition (upstream facts §4.2–§4.6), assembled from
the shared predicates of :mod:`clarion.adapters.sql.predicates`. Building SQLAlchemy
expression trees costs far more than running these statements, so every statement is built
on first use per shape and cached; values travel as bound parameters:
``pending_id``, ``session_id``, ``terminal``, ``updated_at``, ``event_bits`` (the notification
event a transition marks its rows with, :mod:`clarion.adapters.sql.outbox`) and
``id_<n>``/``metadata_<n>``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Final, Literal

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.elements import ColumnElement

from clarion.adapters.sql.approvals import EXTRAS_COLUMNS
from clarion.adapters.sql.driver import driver_rows
from clarion.adapters.sql.metadata_sql import (
    AsJson,
    Inline,
    const,
    json_remove,
    json_set,
    question_id_of,
    status_of,
)
from clarion.adapters.sql.outbox import marked
from clarion.adapters.sql.predicates import (
    bundle_is_well_formed,
    current_turn_id,
    in_live_session,
    is_active_row,
    is_clarification,
    is_delivery_pending,
    is_detached,
    is_pendingish,
    on_current_turn,
    pending_id_of,
)
from clarion.adapters.sql.records import MESSAGE_COLUMNS, RESOLVER_COLUMNS
from clarion.adapters.sql.schema import bundle_extras, task_sessions
from clarion.adapters.sql.schema import messages as m
from clarion.adapters.sql.visibility import Seen, bundle_is_visible
from clarion.domain.model import ANSWERED, RESUME
from clarion.domain.notifications import RESOLVED
from clarion.domain.transitions import DELIVERY_PENDING, RESPONSE, STATUS

Guard = Literal[
    "bundle",  # the bundle's clarification rows (lookups ignore other types, §9.17)
    "claimable",  # the claim: active rows (D4) of a well-formed bundle (§4.5)
    "marked",  # rows still carrying the delivery marker (§4.6)
    "finalizable",  # marked rows that carry the claimed terminal status
    "restorable",  # marked rows on the current turn of a live session, well formed (§4.6)
    "restorable_terminal",  # restorable rows that carry the claimed terminal status
    "ending",  # expire/cancel: the bundle's pending current-turn rows in one session (§4.3)
    "detachable",  # detach: the session's pending current-turn rows not yet detached (§4.2)
    "session_active",  # the workflow guard: the session's pending current-turn rows
]


_ONE = Inline(1, sa.Integer())


def _param(name: str) -> Any:
    return sa.bindparam(name, type_=sa.Text())


def _bits() -> Any:
    return sa.bindparam("event_bits", type_=sa.Integer())


@cache
def guard(kind: Guard) -> ColumnElement[bool]:
    """The condition of ``kind`` over ``task_session_messages`` (see :data:`Guard`)."""
    bundle = sa.and_(pending_id_of(m) == _param("pending_id"), is_clarification(m))
    in_session = m.c.task_session_id == _param("session_id")
    has_terminal = status_of(m) == _param("terminal")
    if kind == "bundle":
        return bundle
    if kind == "claimable":
        return sa.and_(bundle, is_active_row(m), bundle_is_well_formed(m))
    if kind == "marked":
        return sa.and_(bundle, is_delivery_pending(m))
    if kind == "finalizable":
        return sa.and_(guard("marked"), has_terminal)
    if kind == "restorable":
        return sa.and_(
            guard("marked"), on_current_turn(m), in_live_session(m), bundle_is_well_formed(m)
        )
    if kind == "restorable_terminal":
        return sa.and_(guard("restorable"), has_terminal)
    if kind == "ending":
        return sa.and_(bundle, in_session, is_active_row(m, require_live_session=False))
    if kind == "detachable":
        return sa.and_(
            in_session, is_active_row(m, require_live_session=False), sa.not_(is_detached(m))
        )
    if kind == "session_active":
        return sa.and_(in_session, is_active_row(m, require_live_session=False))
    raise ValueError(kind)


@cache
def bundle_with_sessions() -> sa.Select[Any]:
    """A bundle's clarification rows, each with its session's ``task_id`` (NULL when the
    session row is missing) and the bundle's extras (issue #33; NULL when it has none, one
    primary-key probe): ``load_bundle`` in one statement.

    The session's task is a correlated subquery, one primary-key probe per row, not an outer
    join: joined, PostgreSQL planned a merge join that walked ``task_sessions`` in key order
    from its first row up to the bundle's session, half the sessions per load on average
    (issue #35, tenth pass: 35,000 session rows read a second in ``replicas_bench``'s answer
    window)."""
    session = task_sessions.alias("bundle_session")
    session_task_id = (
        sa.select(session.c.task_id)
        .where(session.c.id == m.c.task_session_id)
        .correlate(m)
        .scalar_subquery()
        .label("session_task_id")
    )
    joined = m.outerjoin(bundle_extras, bundle_extras.c.pending_id == _param("pending_id"))
    return (
        sa.select(*MESSAGE_COLUMNS, session_task_id, *EXTRAS_COLUMNS)
        .select_from(joined)
        .where(guard("bundle"))
        .order_by(m.c.created_at, m.c.id)
    )


@cache
def visible_bundle_with_sessions(seen: Seen) -> sa.Select[Any]:
    """:func:`bundle_with_sessions` for a caller who sees ``seen``: the same rows when the
    bundle's M5 task exists and is visible (:func:`bundle_is_visible`, the lists' own
    predicate), none otherwise — so a hidden bundle reads exactly what an absent one does
    (issue #14)."""
    statement = bundle_with_sessions()
    return statement.where(bundle_is_visible(seen)) if seen.filtered else statement


@cache
def duplicate_candidates() -> sa.Select[Any]:
    """Pending ids of the session's active rows (the workflow-guard reading: pending-ish
    clarification rows on the session's current turn) whose bundle has the questions digest
    ``digest``, with each row's (``created_at``, ``id``) for the caller to order (an ORDER BY
    here leads SQLite to walk the session's whole transcript in creation order instead). The
    current turn is computed once from the bound session id, so (session, turn, digest) is one
    seek of the pending-rows index."""
    session_id = _param("session_id")
    return sa.select(pending_id_of(m).label("pending_id"), m.c.created_at, m.c.id).where(
        m.c.task_session_id == session_id,
        m.c.turn_id == current_turn_id(session_id),
        is_clarification(m),
        is_pendingish(m),
        m.c.bundle_digest == sa.bindparam("digest", type_=sa.Text()),
    )


@cache
def select_rows(kind: Guard) -> sa.Select[Any]:
    """The rows ``kind`` matches, in creation order."""
    return sa.select(*MESSAGE_COLUMNS).where(guard(kind)).order_by(m.c.created_at, m.c.id)


# The guards of the transitions that take the delivery marker off (finalize with a resume,
# restore, recovery): their rows lose the delivery's process with it.
_MARKER_LEAVES = frozenset({"marked", "finalizable", "restorable", "restorable_terminal"})


@cache
def rewrite(kind: Guard, count: int, *, touch: bool, release: bool = False) -> sa.Update:
    """ONE conditional UPDATE of ``count`` rows: each row ``id_<n>`` gets ``metadata_<n>``
    (``updated_at`` when ``touch``; when ``release`` — a row leaving answered/rejected — the
    ``resolver_*`` columns cleared and the notification event ``event_bits`` marked, see
    :mod:`clarion.adapters.sql.outbox`) only while ``kind`` still holds for it; the affected
    row count tells the caller whether the guard held for all of them."""
    ids: list[Any] = [sa.bindparam(f"id_{n}") for n in range(count)]
    new_metadata = sa.case(
        *[
            (m.c.id == ids[n], sa.bindparam(f"metadata_{n}", type_=m.c.metadata.type))
            for n in range(count)
        ],
        else_=m.c.metadata,
    )
    values: dict[str, Any] = {"metadata": new_metadata}
    if kind in _MARKER_LEAVES:
        values["delivery_process"] = sa.null()  # leaves with the marker (issue #28)
    if touch:
        values["updated_at"] = sa.bindparam("updated_at", type_=m.c.updated_at.type)
    if release:
        values.update(dict.fromkeys(RESOLVER_COLUMNS, sa.null()))
        # A resolution rolled back before the outbox took it is never announced; the
        # transition's own event (expire, cancel) is bound as ``event_bits`` (0 for none).
        values["unannounced_events"] = marked(_bits(), dropping=(RESOLVED,))
    return sa.update(m).where(m.c.id.in_(ids), guard(kind)).values(**values)


@cache
def finalize() -> sa.Update:
    """Finalize (facts §4.6) as ONE conditional UPDATE … RETURNING: every row of the bundle
    still carrying the delivery marker (the ``marked`` guard) loses it; status, response and
    ``updated_at`` stay. The caller checks the returned rows are exactly the claim's and rolls
    back otherwise (``transitions.is_exact_claim``), as :func:`rewrite` would have refused."""
    return (
        sa.update(m)
        .where(guard("marked"))
        .values(metadata=json_remove(m, DELIVERY_PENDING), delivery_process=sa.null())
        .returning(*MESSAGE_COLUMNS)
    )


@cache
def sessions_with_active_rows() -> sa.Select[Any]:
    """§4.11: which of ``session_ids`` (expanding) have an active row (D4, live session)."""
    return (
        sa.select(m.c.task_session_id)
        .where(m.c.task_session_id.in_(sa.bindparam("session_ids", expanding=True)))
        .where(is_active_row(m))
        .distinct()
    )


@cache
def active_in_session() -> sa.Select[Any]:
    """The per-session limit's bounded count: the distinct bundles of the session's active
    rows (the workflow-guard reading, as ``session_active``), stopping after ``limit`` of
    them. The current turn is computed once from the bound session id, so the rows are one
    range of ``ix_task_session_messages_pending_rows`` (session, turn)."""
    session_id = _param("session_id")
    bundles = (
        sa.select(m.c.bundle_pending_id)
        .where(
            m.c.task_session_id == session_id,
            m.c.turn_id == current_turn_id(session_id),
            is_clarification(m),
            is_pendingish(m),
            m.c.bundle_pending_id.is_not(None),
        )
        .distinct()
        .limit(sa.bindparam("limit", type_=sa.Integer()))
        .subquery("in_session")
    )
    return sa.select(sa.func.count()).select_from(bundles)


@cache
def active_asked(*, scoped: bool) -> sa.Select[Any]:
    """The per-identity limit's bounded count: the number of distinct active bundles (D4, live
    session) — asked by ``asker_id`` when ``scoped`` — stopping after ``limit`` of them. Walks
    ``ix_task_session_messages_pending_asker`` (scoped) or ``…_pending_order`` (not)."""
    terms = [
        is_clarification(m),
        is_pendingish(m),
        m.c.bundle_pending_id.is_not(None),
        on_current_turn(m),
        in_live_session(m),
    ]
    if scoped:
        terms.insert(0, m.c.asker_id == sa.bindparam("asker_id", type_=m.c.asker_id.type))
    bundles = (
        sa.select(m.c.bundle_pending_id)
        .where(*terms)
        .distinct()
        .limit(sa.bindparam("limit", type_=sa.Integer()))
        .subquery("asked")
    )
    return sa.select(sa.func.count()).select_from(bundles)


def _bounded_rows(terms: list[ColumnElement[bool]], limit: str) -> Any:
    """How many pending-row index entries match ``terms``, counting no further than the bound
    ``limit``: a walk of index entries only, no per-row probe, no DISTINCT."""
    rows = (
        sa.select(_ONE)
        .where(is_clarification(m), is_pendingish(m), *terms)
        .limit(sa.bindparam(limit, type_=sa.Integer()))
        .subquery()
    )
    return sa.select(sa.func.count()).select_from(rows).scalar_subquery()


@cache
def pending_row_bounds(*, scoped: bool) -> sa.Select[Any]:
    """Upper bounds of create's two limit counts in one statement (``active_limit_reached``):
    the session's pending clarification rows on its current turn (one range of
    ``ix_task_session_messages_pending_rows``; bound ``session_limit``) and the pending
    clarification rows asked by ``asker_id`` when ``scoped``, else all of them (bound
    ``identity_limit``). Every active bundle counted by ``active_in_session`` or
    ``active_asked`` has at least one of these rows, so a bound below its limit proves room."""
    session_id = _param("session_id")
    in_session = _bounded_rows(
        [m.c.task_session_id == session_id, m.c.turn_id == current_turn_id(session_id)],
        "session_limit",
    )
    asked_by = [m.c.asker_id == sa.bindparam("asker_id", type_=m.c.asker_id.type)]
    asked = _bounded_rows(asked_by if scoped else [], "identity_limit")
    return sa.select(in_session, asked)


@cache
def pending_summary() -> sa.Select[int, Any]:
    """Every active bundle (D4, live session): how many, and the oldest D1 ``created_at`` —
    over ``ix_task_session_messages_pending_order`` (pending clarification rows only)."""
    return sa.select(
        sa.func.count(sa.distinct(m.c.bundle_pending_id)), sa.func.min(m.c.bundle_created_at)
    ).where(
        is_clarification(m),
        is_pendingish(m),
        m.c.bundle_pending_id.is_not(None),
        on_current_turn(m),
        in_live_session(m),
    )


@cache
def in_delivery() -> sa.Select[Any]:
    """Recovery's scan (issue #28): every clarification row still marked
    ``response_delivery_pending`` — its pending id, claim time and the process that claimed
    it — read from ``ix_task_session_messages_in_delivery`` alone, so a round costs what is in
    delivery, not the message history."""
    return sa.select(
        pending_id_of(m).label("pending_id"), m.c.updated_at, m.c.delivery_process
    ).where(is_clarification(m), is_delivery_pending(m))


@cache
def delivery_processes() -> sa.Select[Any]:
    """The process each marked row of ``pending_id`` was claimed under (NULL: unrecorded)."""
    return sa.select(m.c.delivery_process).where(guard("marked"))


@cache
def resume_records() -> sa.Select[Any]:
    """Whether a resume record (a ``resume`` message) carries ``pending_id`` (recovery)."""
    return (
        sa.select(m.c.id)
        .where(pending_id_of(m) == _param("pending_id"), m.c.type == RESUME)
        .limit(1)
    )


CLAIMED_QUESTION: Final = "claimed_question_id"


@cache
def claim(terminal: str, answers: int, *, question_ids: bool = False) -> sa.Update:
    """The claim (facts §4.5) as ONE conditional UPDATE … RETURNING: every claimable row
    (the ``claimable`` guard) takes ``terminal``, the delivery marker, ``updated_at``, who
    resolved (the ``resolver_*`` columns, bound by the same names; NULL when not recorded;
    issue #20), its notification event (``event_bits``: the ``resolved`` bit, or 0 for none;
    :mod:`clarion.adapters.sql.outbox`), the process whose lease it was made under
    (``delivery_process``, NULL for none; issue #28) and — answered only — the response
    bound for its question id (``question_<n>`` → ``response_<n>``, JSON text; NULL when none
    was given, which the caller refuses). With ``question_ids``, every returned row also
    carries its question id as :data:`CLAIMED_QUESTION`, after :data:`MESSAGE_COLUMNS` (what
    the audit append folded into the claim checks, issue #34)."""
    values: dict[str, Any] = {
        STATUS: _param("terminal"),
        DELIVERY_PENDING: AsJson(const("true")),
    }
    if terminal == ANSWERED:
        by_question = sa.case(
            *[
                (question_id_of(m) == sa.bindparam(f"question_{n}"), _param(f"response_{n}"))
                for n in range(answers)
            ],
            else_=sa.null(),
        )
        values[RESPONSE] = AsJson(by_question) if answers else AsJson(sa.null())
    returned: list[Any] = list(MESSAGE_COLUMNS)
    if question_ids:
        returned.append(question_id_of(m).label(CLAIMED_QUESTION))
    return (
        sa.update(m)
        .where(guard("claimable"))
        .values(
            metadata=json_set(m, values),
            updated_at=sa.bindparam("updated_at", type_=m.c.updated_at.type),
            unannounced_events=marked(_bits()),
            delivery_process=_param("delivery_process"),
            **{name: _param(name) for name in RESOLVER_COLUMNS},
        )
        .returning(*returned)
    )


@attrs.frozen
class DriverStatement:
    """A cached statement compiled ONCE for one dialect, run on the driver's cursor
    (:func:`clarion.adapters.sql.driver.driver_rows`).

    ``Connection.execute`` of even a cached statement regenerates its cache key, constructs
    its parameters and sets up its result processing on every call — on the claim, which runs
    it once per resolution, that is a measurable share of the whole transaction (issue #34).
    Here the SQL text, the order of its bound names, each bind's and each returned column's
    type processor are taken from one compilation, so a call only processes values: the same
    SQL, the same bound values and the same Python values back as ``execute`` gives.
    ``before_cursor_execute`` listeners still see every statement, and driver errors are
    raised as SQLAlchemy's.
    """

    sql: str
    positional: tuple[str, ...] | None  # the bound names in order (qmark), None when named
    binds: Mapping[str, Callable[[Any], Any] | None]  # every required bind's processor
    constants: Mapping[str, Any]  # the compiled-in bound values, processed once
    results: tuple[Callable[[Any], Any] | None, ...]  # each returned column's processor
    names: tuple[str, ...] = ()  # each returned column's name, in the same order

    @classmethod
    def compile(cls, statement: sa.Select[Any] | sa.Update, dialect: Dialect) -> DriverStatement:
        """``statement`` compiled for ``dialect``; its bound values plain ones (no expanding
        IN lists), its returned columns' types ones whose results need no driver type code
        (every column Clarion reads)."""
        compiled = statement.compile(dialect=dialect)
        binds: dict[str, Callable[[Any], Any] | None] = {}
        constants: dict[str, Any] = {}
        for bind, name in compiled.bind_names.items():
            if bind.expanding or bind.literal_execute:
                raise ValueError(f"{name}: only plain bound values run as driver SQL")
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if bind.required:
                binds[name] = process
            else:
                value = bind.effective_value
                constants[name] = process(value) if process is not None else value
        results = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in statement.exported_columns
        )
        positional = tuple(compiled.positiontup or ()) if compiled.positional else None
        names = tuple(map(str, statement.exported_columns.keys()))
        return cls(compiled.string, positional, binds, constants, results, names)

    def rows(self, connection: Connection, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Run with ``params`` (every required bound name) and return the processed rows."""
        values = dict(self.constants)
        for name, process in self.binds.items():
            value = params[name]
            values[name] = value if process is None else process(value)
        bound: Any = (
            values if self.positional is None else tuple(values[name] for name in self.positional)
        )
        found = driver_rows(connection, self.sql, bound)
        processors = self.results
        return [
            tuple(
                value if process is None else process(value)
                for process, value in zip(processors, row, strict=True)
            )
            for row in found
        ]

    def mappings(self, connection: Connection, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """:meth:`rows`, each as a mapping of the returned columns' names to their values."""
        return [dict(zip(self.names, row, strict=True)) for row in self.rows(connection, params)]


class PerDialect:
    """The statement ``build`` returns, compiled once per dialect (engine) as a
    :class:`DriverStatement`: for a statement on a hot path that takes no statement-level
    options (the bundle lock that opens every claim, a ``tasks/get`` poll's probe)."""

    def __init__(self, build: Callable[[], sa.Select[Any] | sa.Update]) -> None:
        self._build = build
        self._compiled: weakref.WeakKeyDictionary[Dialect, DriverStatement] = (
            weakref.WeakKeyDictionary()
        )

    def __call__(self, dialect: Dialect) -> DriverStatement:
        statement = self._compiled.get(dialect)
        if statement is None:
            statement = self._compiled[dialect] = DriverStatement.compile(self._build(), dialect)
        return statement
