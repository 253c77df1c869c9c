"""Signed receipts (issue #34): what a resolution decided, in a form an agent verifies offline.

A receipt is a *payload* — the request's id, the digest of what was asked, the outcome, who
resolved it, on which surface and when — serialized as canonical JSON (keys sorted, no
whitespace, UTF-8, see :func:`canonical_json`) and signed with Ed25519 under a key id::

    {"alg": "Ed25519", "kid": "2026-12", "payload": {...}, "signature": "<base64url>"}

A verifier re-serializes ``payload`` canonically and checks ``signature`` over those bytes
with the public key published under ``kid`` (docs/receipts.md has the ~20-line recipe).

Why nothing new is stored: every payload field is read from the durable claim (the rows'
questions and context, the stored responses, the resolver record and the claim's
``updated_at``), and Ed25519 signatures are deterministic (RFC 8032), so the receipt made when
the claim is delivered and one made from the rows a year later are the same bytes — as long as
the same key signs. That is also why the rejection's *reason* is not in a receipt: it is never
stored (R2b), so a receipt holding it could not be made again.

The payload's fields (version 1):

- ``version``: 1; ``type``: ``"clarion.receipt"`` (so no other signed JSON passes as one);
- ``request_id``: the bundle's ``pending_id``;
- ``kind``: ``"questions"``, or ``"approval"`` for an approval request (issue #33);
- ``asked_digest``: ``sha256:`` and the lowercase hex SHA-256 of the canonical JSON of what was
  asked — the question set (:func:`asked_digest`), or an approval's exact action (its
  ``action_digest``, :attr:`clarion.domain.approvals.Action.digest`);
- ``outcome``: ``{"status": "answered", "answers": [...]}`` (the normalized answers in
  question order, as stored) or ``{"status": "rejected"}``;
- ``resolved_by``: ``identity_id``, ``kind``, ``display_name`` and ``surface``;
- ``resolved_at``: the claim's time, RFC 3339 UTC with microseconds.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import attrs

from clarion.domain.errors import ValidationError
from clarion.domain.model import REJECTED, Answer, Question
from clarion.domain.replay import replay_winner
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import Bundle, question_json, response_metadata

RECEIPT_VERSION: Final = 1
RECEIPT_TYPE: Final = "clarion.receipt"
ALGORITHM: Final = "Ed25519"
QUESTIONS: Final = "questions"
APPROVAL: Final = "approval"
KINDS: Final = (QUESTIONS, APPROVAL)
SEED_BYTES: Final = 32  # an Ed25519 private key (RFC 8032 seed)
SIGNATURE_BYTES: Final = 64


def canonical_json(value: Any) -> bytes:
    """The bytes a receipt signs: keys sorted, no whitespace, UTF-8 (not ``\\u`` escapes).

    For the values a payload holds (strings, integers, lists and objects with ASCII keys) this
    is also RFC 8785 JSON Canonicalization, so a verifier in another language can rebuild it."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 4648, section 5), as JWK and JWS write keys and signatures."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def from_b64url(text: str, *, field: str) -> bytes:
    """The bytes of unpadded (or padded) base64url ``text``.

    Raises:
        ValidationError: ``text`` is not base64url; ``field`` names where it was read.
    """
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValidationError(f"{field} is not base64url", field=field) from None


def receipt_time(moment: datetime) -> str:
    """RFC 3339 in UTC with ``Z`` and always six fraction digits: one spelling per instant."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def asked_digest(questions: Sequence[Question], context: str) -> str:
    """``sha256:`` and the hex SHA-256 of the canonical JSON of what a ``questions`` bundle
    asked: ``{"context": ..., "questions": [...]}`` with each question as stored and sent on
    the wire (id, title, prompt, options with option_id, label, description) — the form of an
    approval's action digest, so one verifier flag takes either."""
    asked = {"context": context, "questions": [question_json(q) for q in questions]}
    return "sha256:" + hashlib.sha256(canonical_json(asked)).hexdigest()


def bundle_kind_and_digest(bundle: Bundle) -> tuple[str, str]:
    """What ``bundle`` asked, as a receipt names it: an approval request (issue #33) is bound
    to its exact action (the stored ``action_digest``), any other bundle to its questions and
    context (:func:`asked_digest`)."""
    if bundle.approval is not None:
        return APPROVAL, bundle.approval.action_digest
    return QUESTIONS, asked_digest(bundle.questions, bundle.context)


@attrs.frozen
class ReceiptPayload:
    """What a receipt attests (see the module documentation for each field)."""

    request_id: str
    kind: str
    asked_digest: str
    status: str
    answers: tuple[Answer, ...]
    resolved_by: ResolvedBy
    resolved_at: datetime

    def as_json(self) -> dict[str, Any]:
        outcome: dict[str, Any] = {"status": self.status}
        if self.status != REJECTED:
            outcome["answers"] = [response_metadata(answer) for answer in self.answers]
        by = self.resolved_by
        return {
            "version": RECEIPT_VERSION,
            "type": RECEIPT_TYPE,
            "request_id": self.request_id,
            "kind": self.kind,
            "asked_digest": self.asked_digest,
            "outcome": outcome,
            "resolved_by": {
                "identity_id": by.identity_id,
                "kind": by.kind.value,
                "display_name": by.display_name,
                "surface": by.surface.value,
            },
            "resolved_at": receipt_time(self.resolved_at),
        }

    def signed_bytes(self) -> bytes:
        return canonical_json(self.as_json())


def bundle_receipt_payload(bundle: Bundle) -> ReceiptPayload | None:
    """The payload of ``bundle``'s resolution, read from its durable rows alone; None when
    nobody won its claim. The winner (R2b) is the first answered or rejected row in D2 order:
    its status, its resolver record and its ``updated_at`` (the claim's time); the answers are
    every stored response in D2 order."""
    winner = replay_winner(bundle.pending_id, bundle.rows)
    if winner is None:
        return None
    row = next(row for row in bundle.rows if row.is_resolved)
    kind, digest = bundle_kind_and_digest(bundle)
    return ReceiptPayload(
        request_id=bundle.pending_id,
        kind=kind,
        asked_digest=digest,
        status=winner.status,
        answers=winner.answers,
        resolved_by=row.resolved_by or ResolvedBy.unknown(),
        resolved_at=winner.responded_at,
    )


@attrs.frozen
class PublicKey:
    """One published verification key: its id and the raw 32-byte Ed25519 public key."""

    kid: str
    key: bytes

    def as_json(self) -> dict[str, str]:
        return {"kid": self.kid, "alg": ALGORITHM, "public_key": b64url(self.key)}


def keys_json(keys: Sequence[PublicKey]) -> dict[str, Any]:
    """The published key set: ``{"keys": [{"kid", "alg", "public_key"}, ...]}``, signing key
    first."""
    return {"keys": [key.as_json() for key in keys]}


def parse_keys(data: Any) -> tuple[PublicKey, ...]:
    """The keys of a published key set (:func:`keys_json`'s shape).

    Raises:
        ReceiptInvalid: naming the field that is missing or malformed.
    """
    entries = data.get("keys") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        raise ReceiptInvalid("a key set is an object with a keys array", field="keys")
    keys = []
    for position, entry in enumerate(entries):
        field = f"keys[{position}]"
        if not isinstance(entry, Mapping) or entry.get("alg") != ALGORITHM:
            raise ReceiptInvalid(f"{field} is not an {ALGORITHM} key", field=field)
        raw = from_b64url(_text(entry, "public_key", f"{field}.public_key"), field=field)
        if len(raw) != SEED_BYTES:
            raise ReceiptInvalid(f"{field}.public_key is not 32 bytes", field=field)
        keys.append(PublicKey(_text(entry, "kid", f"{field}.kid"), raw))
    return tuple(keys)


def signed_receipt(payload: ReceiptPayload, kid: str, signature: bytes) -> dict[str, Any]:
    """The receipt as every surface hands it out."""
    return {
        "alg": ALGORITHM,
        "kid": kid,
        "payload": payload.as_json(),
        "signature": b64url(signature),
    }


class ReceiptInvalid(ValidationError):
    """A receipt failed verification; ``field`` names what failed (``signature``, ``kid``,
    ``payload.asked_digest``, ...)."""


@attrs.frozen
class ParsedReceipt:
    """A receipt's parts as a verifier needs them: the key id, the bytes signed (the
    payload re-serialized canonically), the signature and the payload itself."""

    kid: str
    signed: bytes
    signature: bytes
    payload: Mapping[str, Any]


def _text(mapping: Mapping[str, Any], key: str, field: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value:
        raise ReceiptInvalid(f"{field} is missing or not a string", field=field)
    return value


def parse_receipt(data: Any) -> ParsedReceipt:
    """The parts of receipt ``data`` (parsed JSON), its structure checked.

    Raises:
        ReceiptInvalid: naming the field that is missing or malformed.
    """
    if not isinstance(data, Mapping):
        raise ReceiptInvalid("a receipt is a JSON object", field="receipt")
    if data.get("alg") != ALGORITHM:
        raise ReceiptInvalid(f"alg must be {ALGORITHM!r}", field="alg")
    kid = _text(data, "kid", "kid")
    signature = from_b64url(_text(data, "signature", "signature"), field="signature")
    if len(signature) != SIGNATURE_BYTES:
        raise ReceiptInvalid("signature is not 64 bytes", field="signature")
    payload = data.get("payload")
    if not isinstance(payload, Mapping):
        raise ReceiptInvalid("payload is missing or not an object", field="payload")
    if payload.get("version") != RECEIPT_VERSION or payload.get("type") != RECEIPT_TYPE:
        raise ReceiptInvalid(
            f"payload is not a version {RECEIPT_VERSION} {RECEIPT_TYPE}", field="payload.version"
        )
    return ParsedReceipt(kid, canonical_json(payload), signature, payload)


def check_expected(parsed: ParsedReceipt, *, asked: str = "", request_id: str = "") -> None:
    """Refuse a (validly signed) receipt for something else than what the verifier expects:
    another action or question set (``asked``: the expected ``asked_digest``) or another
    request (``request_id``). Empty expectations are not checked.

    Raises:
        ReceiptInvalid: naming ``payload.asked_digest`` or ``payload.request_id``.
    """
    payload = parsed.payload
    if asked and payload.get("asked_digest") != asked.lower():
        raise ReceiptInvalid(
            "the receipt is for a different action or question set",
            field="payload.asked_digest",
        )
    if request_id and payload.get("request_id") != request_id:
        raise ReceiptInvalid("the receipt is for a different request", field="payload.request_id")


__all__ = [
    "ALGORITHM",
    "APPROVAL",
    "KINDS",
    "QUESTIONS",
    "RECEIPT_TYPE",
    "RECEIPT_VERSION",
    "SEED_BYTES",
    "SIGNATURE_BYTES",
    "ParsedReceipt",
    "PublicKey",
    "ReceiptInvalid",
    "ReceiptPayload",
    "asked_digest",
    "b64url",
    "bundle_kind_and_digest",
    "bundle_receipt_payload",
    "canonical_json",
    "check_expected",
    "from_b64url",
    "keys_json",
    "parse_keys",
    "parse_receipt",
    "receipt_time",
    "signed_receipt",
]
