"""The tamper-evident audit chain (issue #34): one hash-linked record per resolution.

Every winning claim — an answer, a rejection, a deadline's default answer (and, with issue
#33, an approval decision, which is a claim too) — appends one :class:`ChainRecord` in the
claim's own transaction. A restore of an undelivered claim (recovery, R7) appends a
``restored`` record: nothing is ever deleted or rewritten, so the chain tells the whole story
(claimed, rolled back, claimed again).

**Scope: one chain per workspace** (the workspace of the bundle's M5 task when the record is
written; "" for tasks outside any workspace). Claims in different workspaces never wait for
each other's chain head, and an operator can verify (and hand over) one workspace's record
alone; the price is one chain per workspace to walk, which ``audit verify`` does in turn.

**The link.** A record's ``body`` is the canonical JSON (sorted keys, no spaces, UTF-8) of
what was decided — event, pending id, status, normalized responses, who resolved it (identity
id, kind, display name, surface) and the claim's timestamp. Its ``hash`` is
``sha256(prev_hash || body)`` in lowercase hex, over the UTF-8 text of the previous record's
hash followed by the body; the first record of a scope links to :data:`GENESIS_HASH`. The
position (scope, ``seq``) is not hashed: it is fixed by the link itself, which is what lets
PostgreSQL compute the hash inside the one statement that takes the next position.

Each scope's head (its last ``seq`` and ``hash``) is kept apart from the records, so a
removed last record is found too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import Any, Final

import attrs

from clarion.domain.model import CLARIFICATION_REQUEST, Answer
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import (
    ClarificationRow,
    MessageRecord,
    parse_row,
    resolve_task_id,
    response_metadata,
)

GENESIS_HASH: Final = "0" * 64  # what the first record of every scope links to
VERSION: Final = 1

RESOLVED_EVENT: Final = "resolved"  # a winning claim
RESTORED_EVENT: Final = "restored"  # an undelivered claim rolled back to pending (R7)


@attrs.frozen
class ChainRecord:
    """One stored link: its position (``scope``, ``seq`` from 1), the bundle it is about, the
    hash it links to and its own, and the canonical JSON it hashes."""

    scope: str
    seq: int
    pending_id: str
    prev_hash: str
    hash: str
    body: str

    def fields(self) -> dict[str, Any]:
        """The chain fields ``audit export`` writes beside a resolution."""
        return {
            "scope": self.scope,
            "seq": self.seq,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


@attrs.frozen
class ChainHead:
    """A scope's last position and hash, as the store keeps them beside the records."""

    scope: str
    seq: int
    hash: str


@attrs.frozen
class ChainBreak:
    """The first broken link of a scope: where (``seq``; the pending id of the record found
    there, "" when none is) and why."""

    seq: int
    pending_id: str
    reason: str


@attrs.frozen
class ChainReport:
    """One scope's verification: how many records were walked, its first break (None when
    every link holds) and, when intact, its last hash — the value to keep elsewhere: a chain
    rewritten from some record on (heads included) no longer ends in it."""

    scope: str
    records: int
    broken: ChainBreak | None = None
    last_hash: str = GENESIS_HASH
    # With the rows checked (``audit verify --rows``): the first bundle, by its newest
    # record's seq, whose rows no longer show what that record says.
    rows_changed: ChainBreak | None = None

    @property
    def intact(self) -> bool:
        return self.broken is None and self.rows_changed is None


# ``json.dumps`` with these options builds this very encoder on every call; every claim
# encodes one body (issue #34), so it is built once. Same options, same text.
_CANONICAL: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(value: Mapping[str, Any]) -> str:
    """The canonical JSON text of ``value``: sorted keys, no insignificant space, non-ASCII
    kept as is (hashed as UTF-8)."""
    return _CANONICAL.encode(value)


def link_hash(prev_hash: str, body: str) -> str:
    """``sha256(prev_hash || body)`` over UTF-8, lowercase hex."""
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


def _instant(at: datetime) -> str:
    """UTC, microsecond precision, fixed width: ``2026-01-05T09:30:00.000000Z``."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def resolver_json(resolved_by: ResolvedBy | None) -> dict[str, str]:
    """Who resolved, as the record holds it ("unknown" when the claim recorded nobody)."""
    who = resolved_by if resolved_by is not None else ResolvedBy.unknown()
    return {
        "identity_id": who.identity_id,
        "kind": who.kind.value,
        "display_name": who.display_name,
        "surface": who.surface.value,
    }


def resolution_body(
    pending_id: str,
    status: str,
    responses: Mapping[str, Answer] | None,
    resolved_by: ResolvedBy | None,
    at: datetime,
) -> str:
    """The body of a winning claim's record: its status, the normalized responses keyed by
    question id in the stored response shape (empty for a rejection), who resolved it and
    the claim's timestamp (its ``responded_at``) — ``canonical`` of
    :func:`resolution_value`.

    Every claim builds one in its transaction (issue #34), so the text is written directly,
    its keys in sorted order and each string escaped by the function ``json`` itself uses
    with ``ensure_ascii=False``: the same text at under half the cost (a unit test holds the
    two equal). A value that is not text takes the general encoder."""
    try:
        return _resolution_text(pending_id, status, responses, resolved_by, at)
    except TypeError:
        return canonical(resolution_value(pending_id, status, responses, resolved_by, at))


def resolution_value(
    pending_id: str,
    status: str,
    responses: Mapping[str, Answer] | None,
    resolved_by: ResolvedBy | None,
    at: datetime,
) -> dict[str, Any]:
    """What :func:`resolution_body` is the canonical JSON of."""
    answers = {qid: response_metadata(answer) for qid, answer in (responses or {}).items()}
    return {
        "v": VERSION,
        "event": RESOLVED_EVENT,
        "pending_id": pending_id,
        "status": status,
        "responses": answers,
        "resolved_by": resolver_json(resolved_by),
        "at": _instant(at),
    }


_UNKNOWN: Final = ResolvedBy.unknown()


def _resolution_text(
    pending_id: str,
    status: str,
    responses: Mapping[str, Answer] | None,
    resolved_by: ResolvedBy | None,
    at: datetime,
) -> str:
    """``canonical(resolution_value(...))`` written key by key (sorted, as ``canonical``
    sorts them; the response's keys are those of ``response_metadata``).

    Raises:
        TypeError: a value that is not text (``encode_basestring`` takes only ``str``).
    """
    text = encode_basestring
    who = resolved_by if resolved_by is not None else _UNKNOWN
    answers = ",".join(
        f'{text(qid)}:{{"custom_text":{text(answer.custom_text)},'
        f'"question_id":{text(answer.question_id)},'
        f'"selected_options":[{",".join(map(text, answer.selected_options))}]}}'
        for qid, answer in sorted((responses or {}).items())
    )
    resolver = (
        f'{{"display_name":{text(who.display_name)},"identity_id":{text(who.identity_id)},'
        f'"kind":{text(who.kind.value)},"surface":{text(who.surface.value)}}}'
    )
    return (
        f'{{"at":{text(_instant(at))},"event":{text(RESOLVED_EVENT)},'
        f'"pending_id":{text(pending_id)},"resolved_by":{resolver},'
        f'"responses":{{{answers}}},"status":{text(status)},"v":{VERSION:d}}}'
    )


def restored_body(pending_id: str, at: datetime) -> str:
    """The body of a restore's record: the bundle is pending again as of ``at``."""
    return canonical(
        {"v": VERSION, "event": RESTORED_EVENT, "pending_id": pending_id, "at": _instant(at)}
    )


@attrs.frozen
class ChainEntry:
    """What a transition appends, before the store places it: the bundle, where to find its
    workspace (the rows' M5 task id, "" to use the session's task) and the body."""

    pending_id: str
    task_id: str
    session_id: str
    body: str

    @classmethod
    def resolution(
        cls,
        rows: Sequence[ClarificationRow],
        terminal: str,
        responses: Mapping[str, Answer] | None,
        resolved_by: ResolvedBy | None,
        at: datetime,
    ) -> ChainEntry:
        """A winning claim's entry: ``rows`` are the rows it claimed (at least one), and the
        record keeps the responses it wrote to them."""
        claimed = {row.question_id for row in rows}
        written = None
        if responses is not None:
            written = {qid: answer for qid, answer in responses.items() if qid in claimed}
        first = rows[0]
        body = resolution_body(first.pending_id, terminal, written, resolved_by, at)
        return cls(first.pending_id, _task_id(rows), first.session_id, body)

    @classmethod
    def restore(cls, rows: Sequence[ClarificationRow], at: datetime) -> ChainEntry:
        """A restore's entry: ``rows`` are the rows it rolled back (at least one)."""
        first = rows[0]
        body = restored_body(first.pending_id, at)
        return cls(first.pending_id, _task_id(rows), first.session_id, body)


def _task_id(rows: Sequence[ClarificationRow]) -> str:
    return resolve_task_id((row.task_id for row in rows), None)


def next_record(head: ChainHead | None, scope: str, pending_id: str, body: str) -> ChainRecord:
    """The record that follows ``head`` in ``scope`` (the first one when ``head`` is None)."""
    prev_hash = head.hash if head is not None else GENESIS_HASH
    seq = head.seq + 1 if head is not None else 1
    return ChainRecord(scope, seq, pending_id, prev_hash, link_hash(prev_hash, body), body)


_PENDING_KEY: Final = '"pending_id":"'


def _names(body: str, pending_id: str) -> bool:
    """Whether canonical ``body`` is about ``pending_id`` (its top-level ``pending_id``).

    Parsing every body would cost most of a verification, so the text is searched when it
    can answer: a string's quotes are escaped inside another string, so each unescaped
    ``"pending_id":"`` is a key with a string value, and the top-level key always has one;
    when it is the only one, it is the top-level one. Otherwise the body is parsed."""
    if body.count(_PENDING_KEY) == 1:
        return f'"pending_id":{json.dumps(pending_id, ensure_ascii=False)}' in body
    try:
        value = json.loads(body)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("pending_id") == pending_id


def _check(record: ChainRecord, seq: int, prev_hash: str) -> str | None:
    """Why ``record``, expected at ``seq`` after ``prev_hash``, breaks the chain (None when
    it holds)."""
    if record.seq != seq:
        return f"expected seq {seq}, found seq {record.seq} (a record removed or reordered)"
    if record.prev_hash != prev_hash:
        return "prev_hash does not match the previous record's hash"
    if link_hash(record.prev_hash, record.body) != record.hash:
        return "hash does not match the record's content (the record was changed)"
    if not _names(record.body, record.pending_id):
        return "pending_id does not match the hashed record"
    return None


def verify_chain(scope: str, records: Iterable[ChainRecord], head: ChainHead | None) -> ChainReport:
    """Walk one scope's ``records`` in ``seq`` order (a stream: memory stays flat) and report
    the first broken link — a changed record (its hash no longer matches), a removed one (a
    gap in ``seq`` or a prev_hash that no longer matches), reordered ones (seq or links out of
    order) — or a last record that is not the stored ``head`` (the newest removed)."""
    seq, prev_hash, count = 0, GENESIS_HASH, 0
    for record in records:
        count += 1
        reason = _check(record, seq + 1, prev_hash)
        if reason is not None:
            return ChainReport(scope, count, ChainBreak(seq + 1, record.pending_id, reason))
        seq, prev_hash = record.seq, record.hash
    if head is not None and (head.seq, head.hash) != (seq, prev_hash):
        reason = f"the chain ends at seq {seq} but its head is seq {head.seq} (records removed)"
        return ChainReport(scope, count, ChainBreak(seq + 1, "", reason))
    if head is None and count:
        return ChainReport(scope, count, ChainBreak(seq, "", "the scope has no head record"))
    return ChainReport(scope, count, last_hash=prev_hash)


def _plain(value: Any) -> Any:
    """``value`` as plain JSON data (read-only mappings and tuples as a store may keep them)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _resolved_now(body: Mapping[str, Any], records: Sequence[MessageRecord]) -> dict[str, Any]:
    """What the bundle's rows show today of the resolution ``body`` records, in its fields."""
    rows = [(parse_row(r), r.metadata) for r in records if r.type == CLARIFICATION_REQUEST]
    resolved = [(row, meta) for row, meta in rows if row.is_resolved]
    if not body.get("backfilled"):  # the claim's rows: those it stamped with its time
        resolved = [(row, meta) for row, meta in resolved if _instant(row.updated_at) == body["at"]]
    if not resolved:
        return {}
    resolvers = {canonical(resolver_json(row.resolved_by)) for row, _ in resolved}
    statuses = {row.status for row, _ in resolved}
    return {
        "status": statuses.pop() if len(statuses) == 1 else sorted(map(str, statuses)),
        "responses": {
            row.question_id: _plain(meta["response"])
            for row, meta in resolved
            if isinstance(meta.get("response"), Mapping)
        },
        "resolved_by": json.loads(resolvers.pop()) if len(resolvers) == 1 else sorted(resolvers),
        "at": _instant(max(row.updated_at for row, _ in resolved)),
    }


def rows_disagree(record: ChainRecord, records: Sequence[MessageRecord]) -> str | None:
    """Why the bundle's rows as they stand (``records``, its clarification rows) no longer show
    what its newest chain ``record`` says — who resolved it, how, what was answered, when —
    or None when they agree. A ``restored`` record's bundle must not read as resolved (a later
    claim would have appended its own record)."""
    body = json.loads(record.body)
    if body.get("event") == RESTORED_EVENT:
        resolved = any(parse_row(r).is_resolved for r in records)
        return "the rows read as resolved after the bundle was restored" if resolved else None
    now = _resolved_now(body, records)
    if not now:
        return "the rows no longer show this resolution"
    differing = [
        key for key in now if canonical({"v": now[key]}) != canonical({"v": body.get(key)})
    ]
    if differing:
        return f"the rows' {', '.join(differing)} differ from the record"
    return None


__all__ = [
    "GENESIS_HASH",
    "RESOLVED_EVENT",
    "RESTORED_EVENT",
    "ChainBreak",
    "ChainEntry",
    "ChainHead",
    "ChainRecord",
    "ChainReport",
    "canonical",
    "link_hash",
    "next_record",
    "resolution_body",
    "resolution_value",
    "resolver_json",
    "restored_body",
    "rows_disagree",
    "verify_chain",
]
