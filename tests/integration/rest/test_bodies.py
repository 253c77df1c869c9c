"""Request bodies: the 1 MiB cap (413), malformed JSON, wrong types and unknown fields (400
naming the field), and JSON error bodies for unknown routes and methods."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.integration.rest.harness import Caller, ask, error_of, field_of

MIB = 1024 * 1024
TOO_LARGE = {"error": "request body too large: the limit is 1048576 bytes (CLARION_MAX_BODY_BYTES)"}


def post_raw(client: TestClient, caller: Caller, url: str, content: Any) -> Any:
    headers = {**caller.headers, "Content-Type": "application/json"}
    return client.post(url, content=content, headers=headers)


def test_a_body_over_1_mib_gets_413_and_exactly_1_mib_does_not(
    client: TestClient, alice: Caller
) -> None:
    pending_id = ask(client, alice)
    url = f"/api/v1/clarification/{pending_id}/respond"
    document = b'{"rejected": true}'
    at_cap = document + b" " * (MIB - len(document))
    over = at_cap + b" "
    refused = post_raw(client, alice, url, over)
    assert (refused.status_code, refused.json()) == (413, TOO_LARGE)
    accepted = post_raw(client, alice, url, at_cap)
    assert accepted.status_code == 200
    assert accepted.json()["status"] == "rejected"


def test_a_chunked_body_over_1_mib_gets_413_without_a_content_length(
    client: TestClient, alice: Caller
) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"name": "'
        for _ in range(17):
            yield b"x" * 65536
        yield b'"}'

    response = post_raw(client, alice, "/api/v1/workspaces", chunks())
    assert (response.status_code, response.json()) == (413, TOO_LARGE)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"   ",
        b"{",
        b'{"rejected": tru}',
        b'{"rejected": NaN}',
        b"\xff\xfe{}",
        b"[" * 100000,
        b'{"reject_reason": "a\\u0000b"}',
        b'{"reject_reason": "\\ud800"}',
    ],
    ids=[
        "empty",
        "blank",
        "truncated",
        "bad-literal",
        "nan",
        "not-utf8",
        "too-deep",
        "nul",
        "lone-surrogate",
    ],
)
def test_a_body_that_is_not_json_gets_400_invalid_payload(
    client: TestClient, alice: Caller, content: bytes
) -> None:
    response = post_raw(client, alice, "/api/v1/clarification/anything/respond", content)
    assert response.status_code == 400
    assert error_of(response).startswith("invalid payload: ")


@pytest.mark.parametrize(
    ("content", "key"),
    [
        (b'{"rejected": false, "rejected": true}', "rejected"),
        (
            b'{"answers": [{"question_id": "q1", "question_id": "q2",'
            b' "selected_options": ["q1_opt1"]}]}',
            "question_id",
        ),
    ],
)
def test_a_key_twice_in_one_object_is_a_400_and_claims_nothing(
    client: TestClient, alice: Caller, content: bytes, key: str
) -> None:
    """Python's parser would keep the last value silently; two readers of one body could then
    disagree about what it says."""
    pending_id = ask(client, alice)
    url = f"/api/v1/clarification/{pending_id}/respond"
    response = post_raw(client, alice, url, content)
    assert response.status_code == 400
    assert error_of(response) == f"invalid payload: duplicate key {key!r} in a JSON object"
    after = post_raw(client, alice, url, b'{"rejected": true}')
    assert after.json()["claimed"] is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([], "body"),
        ({"rejected": "yes"}, "rejected"),
        ({"rejected": 1}, "rejected"),
        ({"answers": "q1"}, "answers"),
        ({"answers": [{"question_id": 1}]}, "answers[0].question_id"),
        (
            {"answers": [{"question_id": "q1", "selected_options": "q1_opt1"}]},
            "answers[0].selected_options",
        ),
        ({"answers": [{"question_id": "q1", "custom_text": None}]}, "answers[0].custom_text"),
        ({"answerz": []}, "answerz"),
        ({"answers": [{"question_id": "q1", "bogus": True}]}, "answers[0].bogus"),
        ({"reason": "old name"}, "reason"),
    ],
)
def test_respond_rejects_wrong_types_and_unknown_fields_naming_the_field(
    client: TestClient, alice: Caller, body: Any, field: str
) -> None:
    pending_id = ask(client, alice)
    response = client.post(
        f"/api/v1/clarification/{pending_id}/respond", json=body, headers=alice.headers
    )
    assert response.status_code == 400
    assert field_of(response) == field


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/v1/clarification/request", {"questions": []}, "session_id"),
        ("/api/v1/clarification/request", {"session_id": "s"}, "questions"),
        ("/api/v1/clarification/request", {"session_id": "s", "questions": {}}, "questions"),
        (
            "/api/v1/clarification/request",
            {"session_id": "s", "questions": [{"options": []}]},
            "questions[0].prompt",
        ),
        (
            "/api/v1/clarification/request",
            {"session_id": "s", "questions": [{"prompt": "p", "options": [{"label": 1}]}]},
            "questions[0].options[0].label",
        ),
        ("/api/v1/workspaces", {"name": 5}, "name"),
        ("/api/v1/workspaces", {"name": "w", "owner": "x"}, "owner"),
        ("/api/v1/tasks", {}, "title"),
        ("/api/v1/tasks", {"title": "t", "workspace_id": None}, "workspace_id"),
    ],
)
def test_create_routes_reject_bad_bodies_naming_the_field(
    client: TestClient, alice: Caller, url: str, body: Any, field: str
) -> None:
    response = client.post(url, json=body, headers=alice.headers)
    assert response.status_code == 400
    assert field_of(response) == field


def test_session_routes_reject_bad_bodies_naming_the_field(
    client: TestClient, alice: Caller
) -> None:
    session = f"/api/v1/sessions/{alice.session_id}"
    for body, field in (({"state": "DONE"}, "state"), ({}, "state"), ({"state": 3}, "state")):
        response = client.patch(session, json=body, headers=alice.headers)
        assert response.status_code == 400
        assert field_of(response) == field
    response = client.post(
        f"/api/v1/tasks/{alice.task_id}/sessions", json={"is_primary": "yes"}, headers=alice.headers
    )
    assert response.status_code == 400
    assert field_of(response) == "is_primary"


def test_unknown_routes_and_methods_answer_in_the_error_shape(
    client: TestClient, alice: Caller
) -> None:
    missing = client.get("/api/v1/nothing-here", headers=alice.headers)
    assert (missing.status_code, missing.json()) == (404, {"error": "not found"})
    wrong = client.delete(f"/api/v1/sessions/{alice.session_id}", headers=alice.headers)
    assert (wrong.status_code, wrong.json()) == (405, {"error": "method not allowed"})
    assert "GET" in wrong.headers["allow"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "ten"}, "limit"),
        ({"limit": ""}, "limit"),
        ({"limit": "1_000"}, "limit"),
        ({"created_since": "yesterday"}, "created_since"),
        ({"created_since": "9999-12-31T23:59:59-01:00"}, "created_since"),
        ({"created_since": "2026-W01-1T00:00Z"}, "created_since"),  # #29 F20
        ({"cursor": "not-a-cursor"}, "cursor"),
    ],
)
def test_a_bad_listing_argument_is_400_naming_it(
    client: TestClient, alice: Caller, query: dict[str, str], field: str
) -> None:
    """L13, and L10's integer ``limit``."""
    response = client.get("/api/v1/clarification/pending", params=query, headers=alice.headers)
    assert response.status_code == 400
    assert field_of(response) == field


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/api/v1/clarification/pending", "limit"),
        ("/api/v1/clarification/pending", "workspace_id"),
        ("/api/v1/clarification/pending", "cursor"),
        ("/api/v1/clarification/resolved", "limit"),
        ("/api/v1/tasks", "workspace_id"),
        ("/api/v1/workspaces", "cursor"),
    ],
)
def test_a_query_parameter_given_twice_is_a_400_naming_it(
    client: TestClient, alice: Caller, path: str, name: str
) -> None:
    """One value per parameter: a repeated one is refused rather than one of its values
    silently chosen (schemathesis found ``?limit=…&limit=0`` answered 200)."""
    response = client.get(f"{path}?{name}=1&{name}=0", headers=alice.headers)
    assert response.status_code == 400
    assert error_of(response) == f"{name}: given more than once"


def test_l10_a_limit_below_one_is_the_default_and_above_the_cap_is_clamped(
    client: TestClient, alice: Caller
) -> None:
    asked = [ask(client, alice, count) for count in (1, 2, 3)]  # distinct: no reuse
    for limit in ("0", "-5", "100000"):
        page = client.get(
            "/api/v1/clarification/pending", params={"limit": limit}, headers=alice.headers
        ).json()
        assert [bundle["pending_id"] for bundle in page["bundles"]] == asked
    first = client.get(
        "/api/v1/clarification/pending", params={"limit": "2"}, headers=alice.headers
    ).json()
    assert first["count"] == 2
    rest = client.get(
        "/api/v1/clarification/pending",
        params={"cursor": first["next_cursor"]},
        headers=alice.headers,
    ).json()
    assert [b["pending_id"] for b in first["bundles"] + rest["bundles"]] == asked
    assert rest["next_cursor"] == ""
