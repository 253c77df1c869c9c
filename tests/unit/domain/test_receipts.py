"""Issue #34: a receipt's payload and its canonical form, made from the stored rows alone."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from clarion.domain.approvals import (
    APPROVE,
    Action,
    ApprovalRecord,
    ApprovalTerms,
    approval_question,
)
from clarion.domain.model import ANSWERED, PENDING, REJECTED, Option, Question
from clarion.domain.receipts import (
    ALGORITHM,
    RECEIPT_TYPE,
    PublicKey,
    ReceiptInvalid,
    asked_digest,
    bundle_receipt_payload,
    canonical_json,
    check_expected,
    keys_json,
    parse_keys,
    parse_receipt,
    receipt_time,
    signed_receipt,
)
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface
from clarion.domain.rows import Bundle, make_bundle, parse_row
from tests.strategies import BASE_TIME, clarification_record

Q1 = Question(id="q1", title="Deploy", prompt="Ship it?", options=(Option("q1_opt1", "Yes", "y"),))
Q2 = Question(id="q2", prompt="Région?", options=(Option("q2_opt1", "EU", ""),))
CLAIMED_AT = BASE_TIME + timedelta(minutes=5, microseconds=120)
ALICE = ResolvedBy("u-alice", IdentityKind.USER, "Alice Ø", Surface.SLACK)


def _bundle(status: str, *, responses: bool = True, context: str = "ctx") -> Bundle:
    records = []
    for index, question in enumerate((Q1, Q2)):
        extra: dict[str, object] = {"status": status}
        if responses and status == ANSWERED:
            extra["response"] = {"selected_options": [question.options[0].option_id]}
        record = clarification_record(
            question, index=index, total=2, context=context, updated_at=CLAIMED_AT, extra=extra
        )
        if status in (ANSWERED, REJECTED):
            record = attrs.evolve(record, resolved_by=ALICE)
        records.append(record)
    return make_bundle("bundle-1", [parse_row(record) for record in records], "task-1")


def test_canonical_json_sorts_keys_drops_whitespace_and_keeps_utf8() -> None:
    assert canonical_json({"b": [1, "é"], "a": {"d": "", "c": "\n"}}) == (
        '{"a":{"c":"\\n","d":""},"b":[1,"é"]}'.encode()
    )


def test_asked_digest_is_the_sha256_of_the_canonical_questions_and_context() -> None:
    expected = json.dumps(
        {
            "context": "ctx",
            "questions": [
                {
                    "id": "q1",
                    "title": "Deploy",
                    "prompt": "Ship it?",
                    "options": [{"option_id": "q1_opt1", "label": "Yes", "description": "y"}],
                }
            ],
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()
    assert asked_digest([Q1], "ctx") == "sha256:" + hashlib.sha256(expected).hexdigest()
    assert asked_digest([Q1], "other") != asked_digest([Q1], "ctx")
    changed = attrs.evolve(Q1, options=(Option("q1_opt1", "Yes!", "y"),))
    assert asked_digest([changed], "ctx") != asked_digest([Q1], "ctx")


def test_an_answered_bundle_gives_the_payload_of_its_stored_claim() -> None:
    bundle = _bundle(ANSWERED)
    payload = bundle_receipt_payload(bundle)
    assert payload is not None
    assert payload.as_json() == {
        "version": 1,
        "type": RECEIPT_TYPE,
        "request_id": "bundle-1",
        "kind": "questions",
        "asked_digest": asked_digest([Q1, Q2], "ctx"),
        "outcome": {
            "status": "answered",
            "answers": [
                {"question_id": "q1", "selected_options": ["q1_opt1"], "custom_text": ""},
                {"question_id": "q2", "selected_options": ["q2_opt1"], "custom_text": ""},
            ],
        },
        "resolved_by": {
            "identity_id": "u-alice",
            "kind": "user",
            "display_name": "Alice Ø",
            "surface": "slack",
        },
        "resolved_at": "2024-05-01T12:05:00.000120Z",  # the claim's updated_at
    }
    assert payload.signed_bytes() == canonical_json(payload.as_json())


def test_a_rejection_says_rejected_and_nothing_else_about_the_outcome() -> None:
    """The reason is never stored (R2b), so no receipt could be made again with it."""
    payload = bundle_receipt_payload(_bundle(REJECTED))
    assert payload is not None
    assert payload.as_json()["outcome"] == {"status": "rejected"}


def test_a_bundle_nobody_won_has_no_payload() -> None:
    assert bundle_receipt_payload(_bundle(PENDING)) is None


def test_receipt_time_is_one_spelling_per_instant() -> None:
    moment = datetime(2026, 3, 1, 9, 2, 13, tzinfo=UTC)
    assert receipt_time(moment) == "2026-03-01T09:02:13.000000Z"
    other_zone = moment.astimezone(timezone(timedelta(hours=2)))
    assert receipt_time(other_zone) == receipt_time(moment)


def _signed() -> dict[str, Any]:
    payload = bundle_receipt_payload(_bundle(ANSWERED))
    assert payload is not None
    return signed_receipt(payload, "k1", bytes(64))


def test_parse_receipt_rebuilds_the_signed_bytes_from_the_payload() -> None:
    receipt = _signed()
    parsed = parse_receipt(json.loads(json.dumps(receipt, indent=3)))
    assert parsed.kid == "k1"
    assert parsed.signature == bytes(64)
    assert parsed.signed == canonical_json(receipt["payload"])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.update(alg="HS256"), "alg"),
        (lambda r: r.pop("kid"), "kid"),
        (lambda r: r.update(signature="!!"), "signature"),
        (lambda r: r.update(signature="AAAA"), "signature"),
        (lambda r: r.update(payload=[]), "payload"),
        (lambda r: r["payload"].update(version=2), "payload.version"),
        (lambda r: r["payload"].update(type="other"), "payload.version"),
    ],
)
def test_a_malformed_receipt_is_refused_naming_the_field(
    change: Callable[[dict[str, Any]], object], field: str
) -> None:
    receipt = json.loads(json.dumps(_signed()))
    change(receipt)
    with pytest.raises(ReceiptInvalid) as refused:
        parse_receipt(receipt)
    assert refused.value.field == field


def test_check_expected_refuses_another_action_or_request() -> None:
    parsed = parse_receipt(_signed())
    digest = asked_digest([Q1, Q2], "ctx")
    check_expected(parsed, asked=digest.upper(), request_id="bundle-1")
    with pytest.raises(ReceiptInvalid) as other_action:
        check_expected(parsed, asked=asked_digest([Q1], "ctx"))
    assert other_action.value.field == "payload.asked_digest"
    with pytest.raises(ReceiptInvalid) as other_request:
        check_expected(parsed, request_id="bundle-2")
    assert other_request.value.field == "payload.request_id"


def test_published_keys_round_trip_and_refuse_a_malformed_set() -> None:
    keys = (PublicKey("new", bytes(range(32))), PublicKey("old", bytes(32)))
    published = keys_json(keys)
    assert published["keys"][0] == {
        "kid": "new",
        "alg": ALGORITHM,
        "public_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",
    }
    assert parse_keys(json.loads(json.dumps(published))) == keys
    for broken, field in (
        ({}, "keys"),
        ({"keys": [{"kid": "a", "alg": "RS256", "public_key": "AA"}]}, "keys[0]"),
        ({"keys": [{"kid": "a", "alg": ALGORITHM, "public_key": "AAAA"}]}, "keys[0]"),
        ({"keys": [{"alg": ALGORITHM, "public_key": published["keys"][0]["public_key"]}]}, ""),
    ):
        with pytest.raises(ReceiptInvalid) as refused:
            parse_keys(broken)
        assert refused.value.field.startswith(field)


def _approval_bundle(action: Action, decision: str) -> Bundle:
    terms = ApprovalTerms(action=action, reason="weekly deploy")
    question = approval_question(terms)
    response = {"selected_options": [decision], "custom_text": "looks fine"}
    record = clarification_record(
        question,
        index=0,
        total=1,
        updated_at=CLAIMED_AT,
        extra={"status": ANSWERED, "response": response},
    )
    rows = [parse_row(attrs.evolve(record, resolved_by=ALICE))]
    bundle = make_bundle("approval-1", rows, "task-1")
    return attrs.evolve(bundle, approval=ApprovalRecord(terms, action.digest))


def test_an_approval_receipt_is_bound_to_the_exact_action_and_carries_the_decision() -> None:
    """Issue #33 + #34: the receipt names the action digest the approval was created with, so
    it cannot be presented for another action (another name, or other arguments)."""
    deploy = Action("deploy", {"service": "api", "version": "2.1"})
    payload = bundle_receipt_payload(_approval_bundle(deploy, APPROVE))
    assert payload is not None
    data = payload.as_json()
    assert (data["kind"], data["asked_digest"]) == ("approval", deploy.digest)
    assert data["asked_digest"].startswith("sha256:")
    assert data["outcome"] == {
        "status": "answered",
        "answers": [
            {
                "question_id": "decision",
                "selected_options": ["approve"],
                "custom_text": "looks fine",
            }
        ],
    }
    parsed = parse_receipt(signed_receipt(payload, "k1", bytes(64)))
    check_expected(parsed, asked=Action("deploy", {"version": "2.1", "service": "api"}).digest)
    for other in (Action("deploy", {"service": "api", "version": "2.2"}), Action("rm", {})):
        with pytest.raises(ReceiptInvalid) as refused:
            check_expected(parsed, asked=other.digest)
        assert refused.value.field == "payload.asked_digest"
