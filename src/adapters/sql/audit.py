"""The audit chain on SQLite and PostgreSQL (issue #34; record and link in
:mod:`clarion.domain.audit_chain`).

**Appending** happens inside the claim's (or restore's) write transaction, after its rows are
written, so the record commits or rolls back with them. The chain stays linear because the
next position is taken from the scope's one ``audit_heads`` row, which the append locks:

- PostgreSQL: ``INSERT … ON CONFLICT (scope) DO UPDATE … RETURNING`` on the head computes
  the next ``seq`` and the new hash (``sha256`` in the database, over the same UTF-8 text as
  :func:`clarion.domain.audit_chain.link_hash`) from the head's latest committed version, and
  an ``INSERT … SELECT`` from it stores the record — both inside the claim's own statement
  (:func:`claim_and_append`) whenever the record's body is known before the claim runs, else
  in one statement of their own after it (:func:`append_record`). A concurrent
  claim in the same workspace waits on the head row until this transaction ends, then links
  to what it committed: no two records share a ``prev_hash``. Claims in other workspaces do
  not wait. The lock is the transaction's last, taken after the bundle's session locks, so
  it adds no lock-order cycle.
- SQLite: ``BEGIN IMMEDIATE`` already serializes every writer, so ONE ``INSERT … SELECT``
  links the record to the head it reads, hashing with the ``clarion_link_hash`` function
  every connection registers (:func:`clarion.domain.audit_chain.link_hash`), and a trigger
  (migration ``0020_audit_head_trigger``) moves the head to the inserted record.

The scope is the workspace of the bundle's M5 task (the rows' task, else the session's),
found inside the statement.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from typing import Any, Final

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from clarion.adapters.sql.driver import driver_rows
from clarion.adapters.sql.engine import SQLITE_LINK_HASH, check_engine, read_transaction
from clarion.adapters.sql.metadata_sql import is_clarification
from clarion.adapters.sql.records import select_messages
from clarion.adapters.sql.schema import audit_chain, audit_heads, messages
from clarion.adapters.sql.statements import CLAIMED_QUESTION, DriverStatement
from clarion.domain.audit_chain import (
    GENESIS_HASH,
    ChainEntry,
    ChainHead,
    ChainRecord,
)
from clarion.domain.rows import MessageRecord, parse_row

PAGE: Final = 2000  # records read per statement while walking a chain

# The workspace of the bundle's M5 task (the rows' task, else the session's; "" without
# one), in SQL both databases read.
_SCOPE: Final = """coalesce((
    SELECT t.workspace_id FROM tasks AS t
    WHERE t.id = coalesce(
        nullif(CAST(:task_id AS text), ''),
        (SELECT s.task_id FROM task_sessions AS s WHERE s.id = CAST(:session_id AS text))
    )
), '')"""


def _driver_sql(sql: str) -> str:
    """``sql`` with its ``:name`` parameters in psycopg's ``%(name)s`` style."""
    return re.sub(r"(?<!:):([a-z_][a-z0-9_]*)", r"%(\1)s", sql)


# The head's move on PostgreSQL (the CTE ``head``) and the record's insert from it, below a
# ``target`` CTE naming the scope (no row: nothing is appended).
_PG_HEAD: Final = """head AS (
    INSERT INTO audit_heads (scope, seq, prev_hash, hash)
    SELECT scope, 1, CAST(:genesis AS text),
           encode(sha256(convert_to(CAST(:genesis AS text) || CAST(:body AS text), 'UTF8')),
                  'hex')
    FROM target
    ON CONFLICT (scope) DO UPDATE SET
        seq = audit_heads.seq + 1,
        prev_hash = audit_heads.hash,
        hash = encode(sha256(convert_to(audit_heads.hash || CAST(:body AS text), 'UTF8')),
                      'hex')
    RETURNING scope, seq, prev_hash, hash
)"""
_PG_RECORD: Final = """INSERT INTO audit_chain (scope, seq, pending_id, prev_hash, hash, body)
SELECT scope, seq, CAST(:pending_id AS text), prev_hash, hash, CAST(:body AS text) FROM head"""

# Both statements go to the driver as they are (:func:`driver_rows`: no compilation, no result
# set-up), the append being the one statement every claim adds: sqlite3 takes ``:name``.
_PG_APPEND: Final = _driver_sql(f"""
WITH target AS (SELECT {_SCOPE} AS scope),
{_PG_HEAD}
{_PG_RECORD}
""")

# The claimed rows' scope, as ``ChainEntry.resolution`` finds it from them: the smallest
# non-empty task id in code-point order (``resolve_task_id``), else the first row's session's.
_CLAIMED_SCOPE: Final = """coalesce((
    SELECT t.workspace_id FROM tasks AS t
    WHERE t.id = coalesce(
        (SELECT min(nullif(c.task_id, '') COLLATE "C") FROM claimed AS c),
        (SELECT s.task_id FROM task_sessions AS s
         WHERE s.id = (SELECT c.task_session_id FROM claimed AS c LIMIT 1))
    )
), '')"""


def claim_and_append(claim: DriverStatement, answers: int) -> DriverStatement:
    """PostgreSQL: the claim ``claim`` (an UPDATE … RETURNING whose last column is
    ``statements.CLAIMED_QUESTION``, its ``question_<n>`` bound for ``answers``) and the
    append of its record (bound as ``body``) as ONE statement, saving the append's round
    trip (issue #34). Each returned row is a claimed row plus ``appended``.

    The body is computed before the claim runs, from every response given; it is the body
    of the rows the claim takes only when each of those responses' question ids is among
    theirs (``ChainEntry.resolution`` keeps the claimed ones), so the record is appended only
    then — else ``appended`` is false and the caller appends the record of what was claimed.
    Locks keep their order: the head row is locked by ``head``, whose condition counts
    ``claimed`` first — reading it to its end, so every claimed row is locked before the
    head, as with the append run after the claim; the bundle's session locks come before
    this statement."""
    questions = ", ".join(f"CAST(:question_{n} AS text)" for n in range(answers))
    # Counts, not EXISTS: an aggregate reads ``claimed`` to its end, so every row is claimed
    # (and locked) before ``head`` locks the head row.
    taken = "(SELECT count(*) FROM claimed) > 0"
    if answers:
        taken += f"""
    AND (SELECT count(DISTINCT c.{CLAIMED_QUESTION}) FROM claimed AS c
         WHERE c.{CLAIMED_QUESTION} IN ({questions})) = {answers}"""
    chained = _driver_sql(f"""target AS (SELECT {_CLAIMED_SCOPE} AS scope WHERE {taken}),
{_PG_HEAD},
record AS ({_PG_RECORD})
SELECT claimed.*, EXISTS (SELECT 1 FROM head) AS appended FROM claimed""")
    return attrs.evolve(
        claim,
        sql=f"WITH claimed AS (\n{claim.sql}\n),\n{chained}",
        binds={**claim.binds, "body": None},
        constants={**claim.constants, "genesis": GENESIS_HASH},
        results=(*claim.results, None),
    )


_SQLITE_APPEND: Final = f"""
INSERT INTO audit_chain (scope, seq, pending_id, prev_hash, hash, body)
SELECT target.scope, coalesce(h.seq, 0) + 1, CAST(:pending_id AS text),
       coalesce(h.hash, CAST(:genesis AS text)),
       {SQLITE_LINK_HASH}(coalesce(h.hash, CAST(:genesis AS text)), CAST(:body AS text)),
       CAST(:body AS text)
FROM (SELECT {_SCOPE} AS scope) AS target
LEFT JOIN audit_heads AS h ON h.scope = target.scope
"""


def append_record(connection: Connection, entry: ChainEntry) -> None:
    """Append ``entry`` to its workspace's chain, in the caller's write transaction (one
    statement on either database)."""
    params = {
        "pending_id": entry.pending_id,
        "task_id": entry.task_id,
        "session_id": entry.session_id,
        "body": entry.body,
        "genesis": GENESIS_HASH,
    }
    postgresql = connection.dialect.name == "postgresql"
    driver_rows(connection, _PG_APPEND if postgresql else _SQLITE_APPEND, params)


def _record(row: Any) -> ChainRecord:
    scope, seq, pending_id, prev_hash, hash_, body = row
    return ChainRecord(str(scope), int(seq), str(pending_id), str(prev_hash), str(hash_), str(body))


_COLUMNS: Final = (
    audit_chain.c.scope,
    audit_chain.c.seq,
    audit_chain.c.pending_id,
    audit_chain.c.prev_hash,
    audit_chain.c.hash,
    audit_chain.c.body,
)


class SqlAuditChain:
    """:class:`clarion.ports.audit.AuditChain` on the database (reads only; the claim
    repository writes)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = check_engine(engine)

    def scopes(self) -> tuple[str, ...]:
        union = sa.union(sa.select(audit_chain.c.scope).distinct(), sa.select(audit_heads.c.scope))
        with read_transaction(self._engine) as connection:
            found = connection.execute(union).scalars().all()
        return tuple(sorted(str(scope) for scope in found))

    def heads(self) -> tuple[ChainHead, ...]:
        statement = sa.select(audit_heads.c.scope, audit_heads.c.seq, audit_heads.c.hash)
        with read_transaction(self._engine) as connection:
            found = connection.execute(statement.order_by(audit_heads.c.scope)).all()
        return tuple(ChainHead(str(scope), int(seq), str(hash_)) for scope, seq, hash_ in found)

    def head(self, scope: str) -> ChainHead | None:
        statement = sa.select(audit_heads.c.seq, audit_heads.c.hash).where(
            audit_heads.c.scope == scope
        )
        with read_transaction(self._engine) as connection:
            found = connection.execute(statement).first()
        return None if found is None else ChainHead(scope, int(found.seq), str(found.hash))

    def records(self, scope: str) -> Iterator[ChainRecord]:
        after = 0
        while True:
            statement = (
                sa.select(*_COLUMNS)
                .where(audit_chain.c.scope == scope, audit_chain.c.seq > after)
                .order_by(audit_chain.c.seq)
                .limit(PAGE)
            )
            with read_transaction(self._engine) as connection:
                page = [_record(row) for row in connection.execute(statement)]
            yield from page
            if len(page) < PAGE:
                return
            after = page[-1].seq

    def bundle_rows(self, pending_ids: Collection[str]) -> dict[str, list[MessageRecord]]:
        wanted = sorted(set(pending_ids))
        if not wanted:
            return {}
        where = (messages.c.bundle_pending_id.in_(wanted), is_clarification(messages))
        found: dict[str, list[MessageRecord]] = {}
        with read_transaction(self._engine) as connection:
            for record in select_messages(connection, *where):
                found.setdefault(parse_row(record).pending_id, []).append(record)
        return found

    def latest_for(self, pending_ids: Collection[str]) -> dict[str, ChainRecord]:
        wanted = sorted(set(pending_ids))
        if not wanted:
            return {}
        statement = (
            sa.select(*_COLUMNS)
            .where(audit_chain.c.pending_id.in_(wanted))
            .order_by(audit_chain.c.pending_id, audit_chain.c.seq)
        )
        with read_transaction(self._engine) as connection:
            # Ordered by seq within a pending id: the last one kept is the newest (a bundle's
            # records all lie in one scope, where seq orders them).
            return {row.pending_id: _record(row) for row in connection.execute(statement)}


__all__ = ["SqlAuditChain", "append_record", "claim_and_append"]
