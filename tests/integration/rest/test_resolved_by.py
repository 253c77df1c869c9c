"""Issue #20 over REST: ``respond`` records who resolved and where — "rest" for a bearer
token (or auth disabled), "inbox" for the inbox's cookie session whatever label it sends, and
the self-declared ``X-Clarion-Surface`` label ("cli", "inbox") otherwise. The respond body
(R10–R12) is unchanged by any of it."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from clarion.domain.model import SYNTHETIC_USER_ID, Identity
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface
from tests.integration.rest.harness import Caller, RestWorld, answers, ask, field_of, ok
from tests.integration.rest.test_auth import login


def _recorded(client: TestClient, world: RestWorld, pending_id: str) -> ResolvedBy:
    async def read() -> ResolvedBy:
        bundle = await world.services.resolver.authorize_bundle(Identity.internal(), pending_id)
        [recorded] = {row.resolved_by for row in bundle.rows}
        assert recorded is not None
        return recorded

    portal = client.portal
    assert portal is not None
    return portal.call(read)


def _respond(client: TestClient, pending_id: str, headers: dict[str, str]) -> dict[str, object]:
    url = f"/api/v1/clarification/{pending_id}/respond"
    body: dict[str, object] = ok(client.post(url, json={"answers": answers()}, headers=headers))
    return body


def test_a_bearer_respond_records_rest_and_the_tokens_user(
    client: TestClient, world: RestWorld, alice: Caller, auth_enabled: bool
) -> None:
    pending_id = ask(client, alice)
    body = _respond(client, pending_id, alice.headers)
    assert set(body) == {"success", "claimed", "status", "response"}  # R10: unchanged
    recorded = _recorded(client, world, pending_id)
    assert recorded.surface is Surface.REST
    assert recorded.kind is IdentityKind.USER
    if auth_enabled:
        assert (recorded.identity_id, recorded.display_name) == (alice.user_id, "alice")
    else:
        assert recorded.identity_id == SYNTHETIC_USER_ID


@pytest.mark.parametrize("label", ["cli", "inbox", "CLI "])
def test_the_surface_label_names_the_client_of_a_token_or_unauthenticated_respond(
    client: TestClient, world: RestWorld, alice: Caller, label: str
) -> None:
    pending_id = ask(client, alice)
    _respond(client, pending_id, {**alice.headers, "X-Clarion-Surface": label})
    assert _recorded(client, world, pending_id).surface == Surface(label.strip().lower())


@pytest.mark.parametrize("label", ["email", "deadline", "mcp", ""])
def test_a_label_outside_cli_and_inbox_is_plain_rest(
    client: TestClient, world: RestWorld, alice: Caller, label: str
) -> None:
    """Only the two REST clients may label themselves: nobody can claim to be e-mail."""
    pending_id = ask(client, alice)
    _respond(client, pending_id, {**alice.headers, "X-Clarion-Surface": label})
    assert _recorded(client, world, pending_id).surface is Surface.REST


@pytest.mark.parametrize("auth_enabled", [True], ids=["auth-enabled"])
def test_a_cookie_session_respond_is_the_inbox_whatever_it_claims(
    client: TestClient, world: RestWorld, alice: Caller
) -> None:
    pending_id = ask(client, alice)
    csrf = login(client, alice.headers["Authorization"].removeprefix("Bearer "))
    _respond(client, pending_id, {"X-CSRF-Token": csrf, "X-Clarion-Surface": "cli"})
    recorded = _recorded(client, world, pending_id)
    assert recorded.surface is Surface.INBOX
    assert (recorded.identity_id, recorded.kind) == (alice.user_id, IdentityKind.USER)


def test_the_resolved_list_shows_who_where_and_when_and_hides_foreign_bundles(
    client: TestClient, world: RestWorld, alice: Caller, bob: Caller, auth_enabled: bool
) -> None:
    first = ask(client, alice)
    _respond(client, first, {**alice.headers, "X-Clarion-Surface": "cli"})
    second = ask(client, alice, 2)  # on the turn the first answer's resume started
    url = f"/api/v1/clarification/{second}/respond"
    ok(client.post(url, json={"rejected": True, "reject_reason": "no"}, headers=alice.headers))
    ask(client, alice)  # still pending: not listed
    page = ok(client.get("/api/v1/clarification/resolved", headers=alice.headers))
    assert [bundle["pending_id"] for bundle in page["bundles"]] == [second, first]
    newest, oldest = page["bundles"]
    assert newest["status"] == "rejected"
    assert newest["resolved_by"]["surface"] == "rest"
    assert oldest["status"] == "answered"
    assert oldest["resolved_by"]["surface"] == "cli"
    assert oldest["resolved_at"] == oldest["response"]["responded_at"]
    assert oldest["response"]["answers"] == answers()
    foreign = ok(client.get("/api/v1/clarification/resolved", headers=bob.headers))
    assert foreign["bundles"] == [] if auth_enabled else len(foreign["bundles"]) == 2
    one = ok(client.get("/api/v1/clarification/resolved?limit=1", headers=alice.headers))
    assert [bundle["pending_id"] for bundle in one["bundles"]] == [second]
    rest = ok(
        client.get(
            f"/api/v1/clarification/resolved?limit=1&cursor={one['next_cursor']}",
            headers=alice.headers,
        )
    )
    assert [bundle["pending_id"] for bundle in rest["bundles"]] == [first]
    assert rest["next_cursor"] == ""


@pytest.mark.parametrize("query", ["cursor=%25", "limit=ten"])
def test_a_bad_cursor_or_limit_on_the_resolved_list_is_a_400_naming_it(
    client: TestClient, alice: Caller, query: str
) -> None:
    response = client.get(f"/api/v1/clarification/resolved?{query}", headers=alice.headers)
    assert response.status_code == 400
    assert field_of(response) == query.split("=")[0]
