"""The audit chain's link and its verification (issue #34), on records built in memory."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import attrs

from clarion.domain.audit_chain import (
    GENESIS_HASH,
    ChainHead,
    ChainRecord,
    canonical,
    link_hash,
    next_record,
    resolution_body,
    restored_body,
    verify_chain,
)
from clarion.domain.model import REJECTED

AT = datetime(2026, 1, 5, 9, 30, 0, 120000, tzinfo=UTC)


def _chain(count: int) -> list[ChainRecord]:
    records: list[ChainRecord] = []
    head = None
    for n in range(1, count + 1):
        body = resolution_body(f"p{n}", REJECTED, None, None, AT)
        record = next_record(head, "ws", f"p{n}", body)
        head = ChainHead("ws", record.seq, record.hash)
        records.append(record)
    return records


def _head(records: list[ChainRecord]) -> ChainHead:
    return ChainHead("ws", records[-1].seq, records[-1].hash)


def test_the_link_is_sha256_of_the_previous_hash_and_the_canonical_body() -> None:
    body = canonical({"b": "é", "a": 1})
    assert body == '{"a":1,"b":"é"}'
    expected = hashlib.sha256((GENESIS_HASH + body).encode("utf-8")).hexdigest()
    assert link_hash(GENESIS_HASH, body) == expected
    assert restored_body("p1", AT) == (
        '{"at":"2026-01-05T09:30:00.120000Z","event":"restored","pending_id":"p1","v":1}'
    )


def test_an_intact_chain_and_an_empty_one_verify() -> None:
    records = _chain(4)
    assert [r.seq for r in records] == [1, 2, 3, 4]
    assert records[0].prev_hash == GENESIS_HASH
    report = verify_chain("ws", records, _head(records))
    assert report.intact
    assert report.records == 4
    assert verify_chain("ws", [], None).intact


def test_each_kind_of_tampering_names_its_first_broken_link() -> None:
    records = _chain(5)
    head = _head(records)
    changed = [*records]
    changed[2] = attrs.evolve(records[2], body=records[2].body.replace("rejected", "answered"))
    removed = records[:1] + records[2:]
    swapped = [records[0], records[2], records[1], *records[3:]]
    relabelled = [*records]
    relabelled[3] = attrs.evolve(records[3], pending_id="other")
    cases = {
        "changed": (changed, 3, "p3"),
        "removed": (removed, 2, "p3"),
        "swapped": (swapped, 2, "p3"),
        "relabelled": (relabelled, 4, "other"),
        "truncated": (records[:4], 5, ""),
    }
    for name, (tampered, seq, pending_id) in cases.items():
        broken = verify_chain("ws", tampered, head).broken
        assert broken is not None, name
        assert (broken.seq, broken.pending_id) == (seq, pending_id), name


def test_records_without_a_head_are_a_break() -> None:
    broken = verify_chain("ws", _chain(2), None).broken
    assert broken is not None
    assert "head" in broken.reason


def test_a_pending_id_is_read_from_the_top_level_of_the_record() -> None:
    """A body naming another bundle deeper inside (an answer's text, a future record's
    nested object) never makes a relabelled record pass."""
    body = canonical({"event": "resolved", "nested": {"pending_id": "forged"}, "pending_id": "p1"})
    record = next_record(None, "ws", "p1", body)
    head = ChainHead("ws", 1, record.hash)
    assert verify_chain("ws", [record], head).intact
    forged = attrs.evolve(record, pending_id="forged")
    broken = verify_chain("ws", [forged], head).broken
    assert broken is not None
    assert broken.pending_id == "forged"
    # A pending id whose own text spells a key: escaped inside its string, it names nothing.
    tricky = canonical({"event": "resolved", "pending_id": 'x","pending_id":"p9'})
    relabelled = next_record(None, "ws", "p9", tricky)
    broken = verify_chain("ws", [relabelled], ChainHead("ws", 1, relabelled.hash)).broken
    assert broken is not None
    assert "pending_id" in broken.reason
