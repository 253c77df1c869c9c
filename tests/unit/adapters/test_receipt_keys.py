"""Issue #34: the Ed25519 key ring that signs receipts, verification, and rotation."""

from __future__ import annotations

import base64
import json
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from clarion.adapters.receipts import (
    Ed25519KeyRing,
    Ed25519Verifier,
    key_file_ring,
    parse_receipt_keys,
)
from clarion.adapters.receipts.ed25519 import new_entry
from clarion.app.root.receipt_keys import key_file_for, receipt_keys, sqlite_file_of
from clarion.app.root.settings import Settings
from clarion.app.usecases.receipts import sign_receipt
from clarion.domain.errors import ValidationError
from clarion.domain.model import ANSWERED, Answer
from clarion.domain.receipts import ReceiptInvalid, ReceiptPayload, parse_receipt
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface

OLD = ("2025-01", bytes(range(1, 33)))
NEW = ("2026-01", bytes(range(101, 133)))
PAYLOAD = ReceiptPayload(
    request_id="bundle-1",
    kind="questions",
    asked_digest="ab" * 32,
    status=ANSWERED,
    answers=(Answer("q1", ("q1_opt1", "q1_opt2"), "and more"),),
    resolved_by=ResolvedBy("u-1", IdentityKind.USER, "Alice", Surface.EMAIL),
    resolved_at=datetime(2026, 3, 1, 9, 0, tzinfo=UTC),
)


def _b64(seed: bytes) -> str:
    return base64.b64encode(seed).decode()


def _verify(receipt: Any, ring: Ed25519KeyRing) -> None:
    Ed25519Verifier().verify(parse_receipt(json.loads(json.dumps(receipt))), ring.public_keys())


def test_a_signed_receipt_verifies_and_signing_is_deterministic() -> None:
    ring = Ed25519KeyRing.of([OLD])
    receipt = sign_receipt(ring, PAYLOAD)
    assert receipt["kid"] == "2025-01"
    _verify(receipt, ring)
    assert sign_receipt(Ed25519KeyRing.of([OLD]), PAYLOAD) == receipt  # made again: same bytes


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    else:
        yield path


def _tampered(receipt: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(receipt))
    *parents, last = path
    target = copy["payload"]
    for key in parents:
        target = target[key]
    value = target[last]
    target[last] = value + 1 if isinstance(value, int) else f"{value}x"
    return copy


PATHS = list(_leaves(sign_receipt(Ed25519KeyRing.of([OLD]), PAYLOAD)["payload"]))


@pytest.mark.parametrize("path", PATHS, ids=[".".join(map(str, p)) for p in PATHS])
def test_changing_any_field_of_the_payload_fails_verification(path: tuple[Any, ...]) -> None:
    ring = Ed25519KeyRing.of([OLD])
    tampered = _tampered(sign_receipt(ring, PAYLOAD), path)
    with pytest.raises(ReceiptInvalid) as refused:
        _verify(tampered, ring)
    # version and type are refused before the signature is even checked
    assert refused.value.field in ("signature", "payload.version")


def test_every_field_of_the_payload_is_covered() -> None:
    assert {path[0] for path in PATHS} == set(PAYLOAD.as_json())


def test_an_added_field_or_another_signer_fails() -> None:
    ring = Ed25519KeyRing.of([OLD])
    receipt = sign_receipt(ring, PAYLOAD)
    receipt["payload"]["note"] = "approved"
    with pytest.raises(ReceiptInvalid, match="does not match"):
        _verify(receipt, ring)
    forged = sign_receipt(Ed25519KeyRing.of([("2025-01", NEW[1])]), PAYLOAD)  # same kid
    with pytest.raises(ReceiptInvalid) as refused:
        _verify(forged, ring)
    assert refused.value.field == "signature"


def test_rotation_new_key_signs_old_receipts_still_verify_until_the_key_is_dropped() -> None:
    before = Ed25519KeyRing.of([OLD])
    after = Ed25519KeyRing.of([NEW, OLD])
    old_receipt = sign_receipt(before, PAYLOAD)
    new_receipt = sign_receipt(after, PAYLOAD)
    assert new_receipt["kid"] == "2026-01"
    assert [key.kid for key in after.public_keys()] == ["2026-01", "2025-01"]
    _verify(old_receipt, after)
    _verify(new_receipt, after)
    with pytest.raises(ReceiptInvalid) as retired:
        _verify(old_receipt, Ed25519KeyRing.of([NEW]))
    assert retired.value.field == "kid"


def test_parse_receipt_keys_reads_entries_and_names_what_is_wrong() -> None:
    value = f" {OLD[0]}:{_b64(OLD[1])} ,\n{NEW[0]}:{_b64(NEW[1]).replace('+', '-')}"
    assert parse_receipt_keys(value, "CLARION_RECEIPT_KEYS") == (OLD, NEW)
    for bad, message in (
        (_b64(OLD[1]), "kid:base64-key"),
        (f"bad kid:{_b64(OLD[1])}", "the kid must be"),
        (f"a:{_b64(OLD[1])},a:{_b64(NEW[1])}", "repeats the kid"),
        (f"a:{_b64(bytes(16))}", "32-byte"),
        (f"a:{_b64(bytes(32))}", "degenerate"),
        ("a:not base64!", "32-byte"),
    ):
        with pytest.raises(ValidationError, match=message) as refused:
            parse_receipt_keys(bad, "CLARION_RECEIPT_KEYS")
        assert refused.value.field == "CLARION_RECEIPT_KEYS"
        assert "CLARION_RECEIPT_KEYS" in str(refused.value)


def test_new_entry_makes_a_usable_entry() -> None:
    [(kid, seed)] = parse_receipt_keys(new_entry("2027"), "x")
    assert kid == "2027"
    assert len(seed) == 32
    [(derived, _)] = parse_receipt_keys(new_entry(), "x")
    assert derived.startswith("k-")


def test_the_key_file_is_made_once_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "clarion.db.receipt-key"
    first = key_file_ring(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert key_file_ring(path).public_keys() == first.public_keys()
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left


def test_a_key_file_written_by_hand_is_read_as_a_ring(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(f"{NEW[0]}:{_b64(NEW[1])}\n{OLD[0]}:{_b64(OLD[1])}\n", encoding="ascii")
    assert key_file_ring(path).public_keys() == Ed25519KeyRing.of([NEW, OLD]).public_keys()


def test_the_setting_takes_entries_or_a_file(tmp_path: Path) -> None:
    entries = f"{NEW[0]}:{_b64(NEW[1])},{OLD[0]}:{_b64(OLD[1])}"
    assert Settings.from_env({"CLARION_RECEIPT_KEYS": entries}).receipt_keys == (NEW, OLD)
    path = tmp_path / "ring"
    path.write_text(entries.replace(",", "\n"), encoding="ascii")
    assert Settings.from_env({"CLARION_RECEIPT_KEYS": str(path)}).receipt_keys == (NEW, OLD)
    with pytest.raises(ValidationError, match="CLARION_RECEIPT_KEYS: cannot read"):
        Settings.from_env({"CLARION_RECEIPT_KEYS": str(tmp_path / "missing")})
    assert "receipt_keys" not in repr(Settings.from_env({"CLARION_RECEIPT_KEYS": entries}))


def test_which_ring_signs(tmp_path: Path) -> None:
    """The setting, else a SQLite file's key file, else a key of this process."""
    configured = Settings(receipt_keys=(NEW,))
    database = str(tmp_path / "clarion.db")
    assert receipt_keys(configured, database).signing_kid == "2026-01"
    assert not (tmp_path / "clarion.db.receipt-key").exists()
    from_file = receipt_keys(Settings(), database)
    assert from_file.persistent
    kid = from_file.signing_kid
    assert (tmp_path / "clarion.db.receipt-key").exists()
    assert receipt_keys(Settings(), database).signing_kid == kid  # a restart: the same key
    ephemeral = receipt_keys(Settings(), None)
    assert not ephemeral.persistent
    assert ephemeral.signing_kid != receipt_keys(Settings(), None).signing_kid


def test_only_a_sqlite_file_has_a_key_file() -> None:
    assert sqlite_file_of("sqlite:///./clarion.db") == "./clarion.db"
    assert sqlite_file_of("postgresql+psycopg://u@h/db") is None
    assert sqlite_file_of("memory://") is None
    assert key_file_for(":memory:") is None
    assert key_file_for(None) is None
    assert key_file_for("/data/c.db") == Path("/data/c.db.receipt-key")
