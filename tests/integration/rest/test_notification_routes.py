"""``/api/v1/notifications/routes`` (issue #17): an administrator manages every route, a
workspace owner that workspace's routes (acting for themselves), anyone else sees none; bad
input is a 400 naming the field."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings
from tests.integration.rest.harness import LOCAL_URL, field_of

ROUTES = "/api/v1/notifications/routes"


@pytest.fixture(name="clarion")
def fixture_clarion() -> Clarion:
    return build_clarion(
        Settings(database_url="memory://", auth_enabled=True, live_delivery="memory")
    )


@pytest.fixture(name="client")
def fixture_client(clarion: Clarion) -> Iterator[TestClient]:
    with TestClient(clarion.asgi_app, base_url=LOCAL_URL) as client:
        yield client


def _bearer(clarion: Clarion, name: str, *, is_admin: bool = False) -> tuple[str, dict[str, str]]:
    user = clarion.authentication.create_user(name, is_admin=is_admin)
    token = clarion.authentication.issue_token(user.id).token
    return user.id, {"Authorization": f"Bearer {token}"}


def test_an_owner_manages_their_workspace_routes_and_nobody_else_sees_them(
    clarion: Clarion, client: TestClient
) -> None:
    alice, as_alice = _bearer(clarion, "alice")
    _, as_bob = _bearer(clarion, "bob")
    _, as_admin = _bearer(clarion, "root", is_admin=True)
    workspace = clarion.storage.host.create_workspace("alice's", alice)
    body: dict[str, Any] = {
        "channel": "webhook:https://hooks.example/x",
        "workspace_id": workspace.id,
        "remind_after_s": 600,
        "deadline_after_s": 3600,
        "on_deadline": "expire",
    }
    created = client.post(ROUTES, json=body, headers=as_alice)
    assert created.status_code == 201, created.text
    route = created.json()
    assert (route["user_id"], route["created_by"], route["on_deadline"]) == (
        alice,
        alice,
        "expire",
    )
    assert client.post(ROUTES, json=body, headers=as_bob).status_code == 404
    default = {"channel": "webhook:https://hooks.example/ops"}
    assert client.post(ROUTES, json=default, headers=as_alice).status_code == 404
    assert client.post(ROUTES, json=default, headers=as_admin).status_code == 201
    assert [r["id"] for r in client.get(ROUTES, headers=as_alice).json()["routes"]] == [route["id"]]
    assert client.get(ROUTES, headers=as_bob).json() == {"routes": [], "total": 0}
    assert client.get(ROUTES, headers=as_admin).json()["total"] == 2
    assert client.delete(f"{ROUTES}/{route['id']}", headers=as_bob).status_code == 404
    assert client.delete(f"{ROUTES}/{route['id']}", headers=as_alice).json() == {"success": True}
    assert client.delete(f"{ROUTES}/{route['id']}", headers=as_alice).status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"channel": "fax:123"}, "channel"),
        ({"channel": "email:a@example.com", "on_deadline": "default:"}, "on_deadline"),
        ({"channel": "email:a@example.com", "remind_after_s": -1}, "remind_after_s"),
        ({"channel": "email:a@example.com", "events": ["bogus"]}, "events"),
        ({"channel": "email:a@example.com", "user_id": "nobody"}, "user_id"),
        (
            {"channel": "email:a@example.com", "escalate_to": "x", "escalate_after_s": 5},
            "escalate_to",
        ),
    ],
)
def test_a_bad_route_is_a_400_naming_the_problem(
    clarion: Clarion, client: TestClient, body: dict[str, Any], field: str
) -> None:
    _, as_admin = _bearer(clarion, "root", is_admin=True)
    response = client.post(ROUTES, json=body, headers=as_admin)
    assert response.status_code == 400, response.text
    assert response.json()["error"]  # R10: a message naming the problem
    assert field_of(response) == field  # #32: which field, without reading it
    assert client.get(ROUTES, headers=as_admin).json()["total"] == 0


def test_an_email_route_needs_a_user_while_authentication_is_enabled() -> None:
    """#29: its answer links answer as that user — without one it would be stored but never
    send (each retry logged a traceback), so it is refused naming ``user_id``."""
    clarion = build_clarion(
        Settings(
            database_url="memory://",
            auth_enabled=True,
            live_delivery="memory",
            smtp_host="smtp.example.com",  # nothing is sent: no bundle is asked
        )
    )
    with TestClient(clarion.asgi_app, base_url=LOCAL_URL) as client:
        _an_email_route_needs_a_user(clarion, client)


def test_an_email_route_is_refused_without_smtp(clarion: Clarion, client: TestClient) -> None:
    """#30: every e-mail would fail, so the route is a 400 naming ``CLARION_SMTP_HOST``."""
    admin, as_admin = _bearer(clarion, "root", is_admin=True)
    body = {"channel": "email:ops@example.com", "user_id": admin}
    refused = client.post(ROUTES, json=body, headers=as_admin)
    assert refused.status_code == 400
    assert "CLARION_SMTP_HOST" in refused.json()["error"]
    assert client.get(ROUTES, headers=as_admin).json()["total"] == 0


def test_a_route_for_a_workspace_that_does_not_exist_is_a_404(
    clarion: Clarion, client: TestClient
) -> None:
    """#30: even for an administrator, who manages every route."""
    _, as_admin = _bearer(clarion, "root", is_admin=True)
    body = {"channel": "webhook:https://hooks.example/x", "workspace_id": "no-such-workspace"}
    assert client.post(ROUTES, json=body, headers=as_admin).status_code == 404
    assert client.get(ROUTES, headers=as_admin).json()["total"] == 0


def _an_email_route_needs_a_user(clarion: Clarion, client: TestClient) -> None:
    admin, as_admin = _bearer(clarion, "root", is_admin=True)
    refused = client.post(ROUTES, json={"channel": "email:ops@example.com"}, headers=as_admin)
    assert refused.status_code == 400
    assert field_of(refused) == "user_id"
    assert client.get(ROUTES, headers=as_admin).json()["total"] == 0
    body = {"channel": "email:ops@example.com", "user_id": admin}
    assert client.post(ROUTES, json=body, headers=as_admin).status_code == 201


INTERNAL_HOOKS = [
    "webhook:http://127.0.0.1:8765/api/v1/clarification/pending",
    "webhook:http://169.254.169.254/latest/meta-data/",
    "webhook:http://[::1]/x",
    "webhook:http://0x7f000001/x",
    "webhook:http://2130706433/x",
    "webhook:http://metadata.google.internal/computeMetadata/v1/",
    "webhook:http://localhost:9/x",
    "webhook:http://[::ffff:10.0.0.1]/x",
]


@pytest.mark.parametrize("channel", INTERNAL_HOOKS)
def test_a_webhook_to_an_internal_address_is_a_400_naming_the_channel(
    clarion: Clarion, client: TestClient, channel: str
) -> None:
    """#29 S4: a workspace owner (not an administrator) may not route notifications to
    loopback, link-local, private or internal names — nor may an administrator, unless the
    operator allows it with CLARION_OUTBOUND_ALLOW."""
    alice, as_alice = _bearer(clarion, "alice")
    _, as_admin = _bearer(clarion, "root", is_admin=True)
    workspace = clarion.storage.host.create_workspace("alice's", alice)
    for headers in (as_alice, as_admin):
        response = client.post(
            ROUTES, json={"channel": channel, "workspace_id": workspace.id}, headers=headers
        )
        assert response.status_code == 400, response.text
        assert field_of(response) == "channel"
        assert "CLARION_OUTBOUND_ALLOW" in response.json()["error"]  # the setting to change
    assert client.get(ROUTES, headers=as_admin).json()["total"] == 0


def test_the_operator_may_allow_internal_destinations() -> None:
    """#29 S4: CLARION_OUTBOUND_ALLOW lets routes reach what it names."""
    clarion = build_clarion(
        Settings(
            database_url="memory://",
            auth_enabled=True,
            live_delivery="memory",
            outbound_allow="127.0.0.1",
        )
    )
    with TestClient(clarion.asgi_app, base_url=LOCAL_URL) as client:
        alice, as_alice = _bearer(clarion, "alice")
        workspace = clarion.storage.host.create_workspace("alice's", alice)
        body = {"channel": "webhook:http://127.0.0.1:9/x", "workspace_id": workspace.id}
        assert client.post(ROUTES, json=body, headers=as_alice).status_code == 201
        body["channel"] = "webhook:http://[::1]:9/x"
        assert client.post(ROUTES, json=body, headers=as_alice).status_code == 400


@pytest.mark.parametrize(
    ("channel", "owner_may"),
    [
        ("apprise:discord://1234/abcd", True),
        ("apprise:tgram://123:abc/456", True),
        ("apprise:json://hooks.example/x", False),
        ("apprise:xml://hooks.example/x", False),
        ("apprise:ntfys://ntfy.example/topic", False),
        ("apprise:https://discord.com/api/webhooks/1/a", False),
        ("apprise:discord://1234/abcd?method=GET", False),
        ("apprise:discord://1234/abcd?+X-Forwarded-For=1", False),
        ("apprise:discord://1234/abcd?-User-Agent=", False),
        ("apprise:discord://1234/abcd?:field=1", False),
        ("apprise:discord://1234/abcd?redirect=yes", False),
        ("apprise:discord://1/a,json://127.0.0.1/x", False),
    ],
)
def test_only_administrators_choose_apprise_urls_freely(
    clarion: Clarion, client: TestClient, channel: str, owner_may: bool
) -> None:
    """#29 S4: a non-administrator's Apprise route names a hosted service and chooses no HTTP
    method, header, payload field or redirect; an administrator's is used as given."""
    alice, as_alice = _bearer(clarion, "alice")
    _, as_admin = _bearer(clarion, "root", is_admin=True)
    workspace = clarion.storage.host.create_workspace("alice's", alice)
    body = {"channel": channel, "workspace_id": workspace.id}
    response = client.post(ROUTES, json=body, headers=as_alice)
    assert response.status_code == (201 if owner_may else 400), response.text
    if not owner_may:
        assert field_of(response) == "channel"
        assert client.post(ROUTES, json=body, headers=as_admin).status_code == 201


def test_a_webhook_route_gets_its_own_signing_secret(clarion: Clarion, client: TestClient) -> None:
    """#29: webhooks are signed by default — each webhook route gets a random secret, shown to
    whoever manages the route and to nobody else."""
    alice, as_alice = _bearer(clarion, "alice")
    _, as_bob = _bearer(clarion, "bob")
    workspace = clarion.storage.host.create_workspace("alice's", alice)
    body = {"channel": "webhook:https://hooks.example/x", "workspace_id": workspace.id}
    first = client.post(ROUTES, json=body, headers=as_alice).json()
    second = client.post(ROUTES, json=body, headers=as_alice).json()
    assert len(first["secret"]) >= 40
    assert first["secret"] != second["secret"]
    listed = client.get(ROUTES, headers=as_alice).json()["routes"]
    assert {r["secret"] for r in listed} == {first["secret"], second["secret"]}
    assert client.get(ROUTES, headers=as_bob).json()["routes"] == []
    mail = client.post(ROUTES, json={"channel": "email:a@example.com"}, headers=as_alice)
    assert mail.status_code == 404  # (the default routes are the administrator's)


def test_escalation_goes_only_to_a_route_the_creator_may_manage(
    clarion: Clarion, client: TestClient
) -> None:
    """#29 S7: an owner may escalate only into a route they may manage; the admin's operator
    route and another owner's route are refused with exactly the error of a route id that
    does not exist (no existence oracle)."""
    alice, as_alice = _bearer(clarion, "alice")
    bob, as_bob = _bearer(clarion, "bob")
    _, as_admin = _bearer(clarion, "root", is_admin=True)
    alices = clarion.storage.host.create_workspace("alice's", alice)
    bobs = clarion.storage.host.create_workspace("bob's", bob)
    operator = client.post(
        ROUTES, json={"channel": "webhook:https://hooks.example/ops"}, headers=as_admin
    )
    bob_route = client.post(
        ROUTES,
        json={"channel": "webhook:https://hooks.example/bob", "workspace_id": bobs.id},
        headers=as_bob,
    )
    own = client.post(
        ROUTES,
        json={"channel": "webhook:https://hooks.example/a", "workspace_id": alices.id},
        headers=as_alice,
    )
    assert {r.status_code for r in (operator, bob_route, own)} == {201}

    def escalate(target: str) -> Any:
        body = {
            "channel": "webhook:https://hooks.example/b",
            "workspace_id": alices.id,
            "escalate_after_s": 5,
            "escalate_to": target,
        }
        return client.post(ROUTES, json=body, headers=as_alice)

    missing = escalate("no-such-route")
    assert missing.status_code == 400, missing.text
    for foreign in (operator.json()["id"], bob_route.json()["id"]):
        refused = escalate(foreign)
        assert (refused.status_code, refused.json()) == (400, missing.json())
    allowed = escalate(own.json()["id"])
    assert allowed.status_code == 201, allowed.text
    assert allowed.json()["escalate_to"] == own.json()["id"]
    # The administrator may still escalate anywhere.
    body = {"channel": "webhook:https://hooks.example/x", "escalate_after_s": 5}
    body["escalate_to"] = bob_route.json()["id"]
    assert client.post(ROUTES, json=body, headers=as_admin).status_code == 201
