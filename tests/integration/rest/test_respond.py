"""``POST /api/v1/clarification/{id}/respond``: R10 row by row, R2/R2a–c, R11, R12, L16, R7a.

Every test runs in both auth modes (the ``auth_enabled`` fixture): the rows hold for the
synthetic unscoped caller and for a real token holder alike (A4).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

import pytest
from starlette.testclient import TestClient

from clarion.adapters.memory import InMemoryClaimRepository
from clarion.adapters.resume import OutboxResumeDispatcher
from clarion.domain.errors import ClaimError
from clarion.domain.model import Answer
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import ClarificationRow
from clarion.ports.claims import ClaimResult
from clarion.ports.resume import ResumeRefused, ResumeRequest
from clarion.ports.testing import row_metadata
from tests.integration.rest.harness import (
    LOCAL_URL,
    Caller,
    Ports,
    RestWorld,
    answers,
    ask,
    error_of,
    field_of,
    memory_ports,
    ok,
    setup_caller,
)

NOT_ACTIVE = {"error": "clarification request is no longer active"}
NOT_FOUND = {"error": "clarification request not found"}


def respond(client: TestClient, caller: Caller, pending_id: str, body: Any) -> Any:
    return client.post(
        f"/api/v1/clarification/{pending_id}/respond", json=body, headers=caller.headers
    )


def ordered_keys(text: str) -> dict[str, Any]:
    """The raw JSON with every object's keys kept as a list, so presence is read from the
    text itself rather than from a default (R12)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        return {"__keys__": [key for key, _ in items], **dict(items)}

    parsed = json.loads(text, object_pairs_hook=pairs)
    assert isinstance(parsed, dict)
    return parsed


def test_r10_winner_gets_200_claimed_true_with_the_normalized_response(
    client: TestClient, alice: Caller
) -> None:
    pending_id = ask(client, alice, 2)
    submitted = [
        {"question_id": "q2", "custom_text": "  spaced  out  "},
        {"question_id": "q1", "selected_options": ["q1_opt2", "q1_opt1", "q1_opt2"]},
    ]
    body = ok(respond(client, alice, pending_id, {"answers": submitted}))
    assert body["success"] is True  # R11
    assert body["claimed"] is True
    assert body["status"] == "answered"
    response = body["response"]
    assert response["pending_id"] == pending_id
    assert response["answers"] == [  # N3a: question order, option order, deduplicated, trimmed
        {"question_id": "q1", "selected_options": ["q1_opt1", "q1_opt2"], "custom_text": ""},
        {"question_id": "q2", "selected_options": [], "custom_text": "spaced  out"},
    ]
    assert response["rejected"] is False
    assert response["reject_reason"] == ""


def test_r2_a_duplicate_answer_gets_200_claimed_false_with_the_winners_payload(
    client: TestClient, alice: Caller
) -> None:
    """R2 winner branch and A4 change 1: a duplicate is a replay, not a 409."""
    pending_id = ask(client, alice, 3)
    winner = ok(respond(client, alice, pending_id, {"answers": answers(3, option=1)}))
    loser_answers = list(reversed(answers(3, option=2, text="mine")))
    loser = ok(respond(client, alice, pending_id, {"answers": loser_answers}))
    assert winner["claimed"] is True
    assert loser["claimed"] is False
    assert loser["success"] is True
    assert loser["status"] == "answered"
    # R2b: the winner's answers, in question order — never the loser's.
    assert loser["response"] == winner["response"]
    assert [a["question_id"] for a in loser["response"]["answers"]] == ["q1", "q2", "q3"]


def test_r2_a_superseded_bundle_gets_409_because_nobody_won(
    client: TestClient, alice: Caller
) -> None:
    """R2 second branch: a newer turn supersedes the bundle; no winner exists."""
    pending_id = ask(client, alice)
    ok(client.post(f"/api/v1/sessions/{alice.session_id}/turns", headers=alice.headers), 201)
    response = respond(client, alice, pending_id, {"answers": answers()})
    assert response.status_code == 409
    assert response.json() == NOT_ACTIVE


def test_r2_a_terminal_session_bundle_gets_409(client: TestClient, alice: Caller) -> None:
    pending_id = ask(client, alice)
    ok(
        client.patch(
            f"/api/v1/sessions/{alice.session_id}",
            json={"state": "COMPLETED"},
            headers=alice.headers,
        )
    )
    response = respond(client, alice, pending_id, {"rejected": True})
    assert response.status_code == 409
    assert response.json() == NOT_ACTIVE


def test_r2b_a_replayed_rejection_has_empty_answers_and_an_empty_reason(
    client: TestClient, alice: Caller
) -> None:
    pending_id = ask(client, alice, 2)
    winner = ok(respond(client, alice, pending_id, {"rejected": True, "reject_reason": " no "}))
    assert winner["claimed"] is True
    assert winner["status"] == "rejected"
    assert winner["response"]["reject_reason"] == "no"
    assert winner["response"]["answers"] == []
    loser = ok(respond(client, alice, pending_id, {"answers": answers(2)}))
    assert loser["claimed"] is False
    assert loser["status"] == "rejected"
    assert loser["response"]["rejected"] is True
    assert loser["response"]["answers"] == []
    assert loser["response"]["reject_reason"] == ""  # R2b: never stored, so never replayed
    assert loser["response"]["responded_at"] == winner["response"]["responded_at"]


def test_r2c_a_malformed_submission_against_a_resolved_bundle_gets_400_not_the_replay(
    client: TestClient, alice: Caller
) -> None:
    pending_id = ask(client, alice)
    ok(respond(client, alice, pending_id, {"answers": answers()}))
    bad = [{"question_id": "q1", "selected_options": ["nope"]}]
    response = respond(client, alice, pending_id, {"answers": bad})
    assert response.status_code == 400
    assert field_of(response) == "answers[0].selected_options"


def test_r12_every_key_is_present_in_the_raw_json_of_winner_and_loser(
    client: TestClient, alice: Caller
) -> None:
    answered = ask(client, alice)
    sparse = [{"question_id": "q1", "custom_text": "only text"}]
    for response in (
        respond(client, alice, answered, {"answers": sparse}),
        respond(client, alice, answered, {"answers": answers()}),
    ):
        raw = ordered_keys(response.text)
        assert raw["__keys__"] == ["success", "claimed", "status", "response"]
        payload = raw["response"]
        assert payload["__keys__"] == [
            "pending_id",
            "answers",
            "rejected",
            "reject_reason",
            "responded_at",
        ]
        assert payload["rejected"] is False
        assert payload["reject_reason"] == ""
        entry = payload["answers"][0]
        assert entry["__keys__"] == ["question_id", "selected_options", "custom_text"]
        assert entry["selected_options"] == []
        assert '"selected_options":[]' in response.text

    rejected = ask(client, alice, 2)
    for response in (
        respond(client, alice, rejected, {"rejected": True}),
        respond(client, alice, rejected, {"rejected": True, "reject_reason": "again"}),
    ):
        payload = ordered_keys(response.text)["response"]
        assert "answers" in payload["__keys__"]
        assert payload["answers"] == []
        assert payload["reject_reason"] == ""
        assert '"answers":[]' in response.text


_TOO_LONG = "😀" * 2001  # astral: one code point each, two UTF-16 units, four UTF-8 bytes


@pytest.mark.parametrize(
    ("body", "field", "named"),
    [
        pytest.param({"answers": answers(1)}, "answers", "answer", id="N6.1-wrong-count"),
        pytest.param(
            {"answers": [{"question_id": ""}, {"question_id": "q2"}]},
            "answers[0].question_id",
            "question_id",
            id="N6.2",
        ),
        pytest.param(
            {"answers": [{"question_id": "q1"}, {"question_id": "q9"}]},
            "answers[1].question_id",
            "question_id",
            id="N6.3",
        ),
        pytest.param(
            {"answers": [{"question_id": "q1"}, {"question_id": "q1"}]},
            "answers[1].question_id",
            "question_id",
            id="N6.4",
        ),
        pytest.param(
            {
                "answers": [
                    {"question_id": "q1", "selected_options": ["q2_opt1"]},
                    {"question_id": "q2"},
                ]
            },
            "answers[0].selected_options",
            "option_id",
            id="N8-unknown-option",
        ),
        pytest.param({"rejected": True, "answers": answers(2)}, "answers", "rejected", id="N8a"),
        pytest.param({"answers": []}, "answers", "answer", id="N8a-empty-answers"),
        pytest.param(
            {"answers": [{"question_id": "q1", "custom_text": _TOO_LONG}, {"question_id": "q2"}]},
            "answers[0].custom_text",
            "custom_text",
            id="N8b-custom-text",
        ),
        pytest.param(
            {"rejected": True, "reject_reason": _TOO_LONG},
            "reject_reason",
            "reason",
            id="N8b-reject-reason",
        ),
    ],
)
def test_r10_a_validation_failure_is_400_naming_the_field_and_leaves_the_bundle_untouched(
    client: TestClient, alice: Caller, body: dict[str, Any], field: str, named: str
) -> None:
    """N6–N8b each in isolation (N8d); N8c: the bundle stays answerable. ``field`` (#32) says
    which field failed; R10's message still names it in words."""
    pending_id = ask(client, alice, 2)
    response = respond(client, alice, pending_id, body)
    assert response.status_code == 400
    assert field_of(response) == field
    assert named in error_of(response)  # R10: the message names the offending field
    assert ok(respond(client, alice, pending_id, {"answers": answers(2)}))["claimed"] is True


def test_n8b_exactly_2000_code_points_are_accepted(client: TestClient, alice: Caller) -> None:
    pending_id = ask(client, alice)
    text = "😀" * 2000
    body = ok(
        respond(
            client, alice, pending_id, {"answers": [{"question_id": "q1", "custom_text": text}]}
        )
    )
    assert body["response"]["answers"][0]["custom_text"] == text


def test_r10_an_unknown_pending_id_gets_404_with_the_fixed_body(
    client: TestClient, alice: Caller
) -> None:
    response = respond(client, alice, "no-such-bundle", {"answers": answers()})
    assert response.status_code == 404
    assert response.json() == NOT_FOUND


def test_l16_a_bundle_without_question_ids_gets_400_before_the_claim(
    client: TestClient, world: RestWorld, alice: Caller
) -> None:
    """A4 change 5: rejected before the claim (400), never the claim's 500 — answers and
    rejection alike."""
    turn = world.ports.host.current_turn(alice.session_id)
    assert turn is not None
    world.ports.host.append_message(
        alice.session_id,
        turn_id=turn.id,
        content="legacy",
        author_type="agent",
        type="clarification_request",
        metadata=row_metadata("legacy-bundle", question_id=None, question=None),
    )
    for body in ({"rejected": True}, {"answers": [{"question_id": "q1"}]}):
        response = respond(client, alice, "legacy-bundle", body)
        assert response.status_code == 400
        assert field_of(response) == "question_id"


# --- 500s: claim errors and delivery failures (R4a, R7, R7a; fixes §9.3) -------------------

SECRET = "driver said: password=hunter2 at db.internal"


class _BrokenClaims(InMemoryClaimRepository):
    """The in-memory claims, with chosen operations failing like a broken driver."""

    broken: Collection[str] = ()
    raises: type[Exception] = RuntimeError

    def _fail(self, operation: str) -> None:
        if operation in self.broken:
            raise self.raises(SECRET)

    def complete_active_bundle(
        self,
        pending_id: str,
        terminal: str,
        responses: Mapping[str, Answer] | None,
        *,
        resolved_by: ResolvedBy | None = None,
    ) -> ClaimResult:
        self._fail("complete_active_bundle")
        return super().complete_active_bundle(
            pending_id, terminal, responses, resolved_by=resolved_by
        )

    def load_bundle(self, pending_id: str) -> Any:
        self._fail("load_bundle")
        return super().load_bundle(pending_id)


def _broken_world(auth_enabled: bool) -> tuple[RestWorld, _BrokenClaims]:
    ports = memory_ports()
    base = ports.claims
    assert isinstance(base, InMemoryClaimRepository)
    claims = _BrokenClaims(base._store, base._clock, base._ids)
    broken = Ports(claims=claims, host=ports.host, tokens=ports.tokens)
    return RestWorld.build(auth_enabled=auth_enabled, ports=broken), claims


@pytest.mark.parametrize("raises", [RuntimeError, ClaimError], ids=["driver-error", "claim-error"])
def test_r4a_a_failing_claim_gets_500_without_the_drivers_text(
    auth_enabled: bool, raises: type[Exception]
) -> None:
    world, claims = _broken_world(auth_enabled)
    with TestClient(world.app, base_url=LOCAL_URL) as client:
        alice = setup_caller(client, world, "alice")
        pending_id = ask(client, alice)
        claims.broken, claims.raises = {"complete_active_bundle"}, raises
        response = respond(client, alice, pending_id, {"answers": answers()})
        assert response.status_code == 500
        assert response.json() == {"error": "failed to update clarification state"}
        assert "hunter2" not in response.text
        claims.broken = ()
        assert ok(respond(client, alice, pending_id, {"answers": answers()}))["claimed"] is True


@pytest.mark.parametrize("suffix", ["", "/wait", "/respond", "/cancel"])
def test_a_failing_bundle_read_is_500_never_a_silent_404_and_never_leaks(
    auth_enabled: bool, suffix: str
) -> None:
    """facts §8.2 #40–42 on every endpoint, respond included (fixes §9.3's respond leak)."""
    world, claims = _broken_world(auth_enabled)
    with TestClient(world.app, base_url=LOCAL_URL) as client:
        alice = setup_caller(client, world, "alice")
        pending_id = ask(client, alice)
        claims.broken = {"load_bundle"}
        url = f"/api/v1/clarification/{pending_id}{suffix}"
        if suffix in ("/respond", "/cancel"):
            response = client.post(url, json={"answers": answers()}, headers=alice.headers)
        else:
            response = client.get(url, headers=alice.headers)
        assert response.status_code == 500
        assert "hunter2" not in response.text
        assert set(response.json()) == {"error"}


class _SwitchableDispatcher:
    """The outbox, refusing every resume while ``refuse`` is set."""

    def __init__(self, inner: OutboxResumeDispatcher) -> None:
        self.inner = inner
        self.refuse = True

    async def dispatch(self, request: ResumeRequest) -> tuple[ClarificationRow, ...]:
        if self.refuse:
            raise ResumeRefused("agent runner is down")
        return await self.inner.dispatch(request)


def test_r7a_a_refused_resume_is_500_and_the_bundle_stays_answerable(auth_enabled: bool) -> None:
    ports = memory_ports()
    dispatcher = _SwitchableDispatcher(OutboxResumeDispatcher(ports.claims))
    world = RestWorld.build(auth_enabled=auth_enabled, ports=ports, dispatcher=dispatcher)
    with TestClient(world.app, base_url=LOCAL_URL) as client:
        alice = setup_caller(client, world, "alice")
        pending_id = ask(client, alice)
        refused = respond(client, alice, pending_id, {"answers": answers()})
        assert refused.status_code == 500
        assert "can be retried" in error_of(refused)
        assert "agent runner is down" not in refused.text
        dispatcher.refuse = False
        retried = ok(respond(client, alice, pending_id, {"answers": answers(option=2)}))
        assert retried["claimed"] is True
        assert retried["response"]["answers"][0]["selected_options"] == ["q1_opt2"]
