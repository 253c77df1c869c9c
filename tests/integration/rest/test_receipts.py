"""Issue #34 over REST: ``GET /clarification/{id}/receipt``, the published keys, the wait's
``Link`` to its receipt, and the resume record carrying the same receipt — each verified with
the published keys, as an agent would offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from clarion.adapters.receipts import Ed25519KeyRing, Ed25519Verifier
from clarion.adapters.sql import create_engine, upgrade_database
from clarion.domain.model import SYNTHETIC_USER_ID
from clarion.domain.receipts import asked_digest, check_expected, parse_keys, parse_receipt
from clarion.domain.rows import Bundle
from tests.integration.rest.harness import (
    LOCAL_URL,
    Caller,
    RestWorld,
    SignallingWaiters,
    aask,
    answers,
    asetup_caller,
    ask,
    async_client,
    error_of,
    ok,
    setup_caller,
    sql_ports,
)

SIGNER = Ed25519KeyRing.of([("rest-1", bytes(range(7, 39)))])
KEYS = "/.well-known/clarion-receipt-keys"


@pytest.fixture(name="world")
def fixture_world(auth_enabled: bool) -> RestWorld:
    return RestWorld.build(auth_enabled=auth_enabled, receipt_signer=SIGNER)


def _url(pending_id: str) -> str:
    return f"/api/v1/clarification/{pending_id}/receipt"


def verified(receipt: Any, published: Any, *, digest: str = "", request_id: str = "") -> Any:
    """The payload of ``receipt`` once it verifies against the ``published`` key set."""
    parsed = parse_receipt(receipt)
    Ed25519Verifier().verify(parsed, parse_keys(published))
    check_expected(parsed, asked=digest, request_id=request_id)
    return parsed.payload


def _bundle(client: TestClient, world: RestWorld, pending_id: str) -> Bundle:
    async def read() -> Bundle | None:
        return await world.services.runner(world.ports.claims.load_bundle, pending_id)

    assert client.portal is not None
    bundle = client.portal.call(read)
    assert bundle is not None
    return bundle


def test_a_detached_answer_has_a_receipt_that_verifies_and_the_resume_carries_it(
    client: TestClient, world: RestWorld, alice: Caller, auth_enabled: bool
) -> None:
    pending_id = ask(client, alice, count=2)
    url = f"/api/v1/clarification/{pending_id}/respond"
    ok(client.post(url, json={"answers": answers(2, option=2)}, headers=alice.headers))
    receipt = ok(client.get(_url(pending_id), headers=alice.headers))
    published = ok(client.get(KEYS))  # public: no credentials
    bundle = _bundle(client, world, pending_id)
    payload = verified(
        receipt,
        published,
        digest=asked_digest(bundle.questions, bundle.context),
        request_id=pending_id,
    )
    assert payload["outcome"] == {
        "status": "answered",
        "answers": [
            {"question_id": "q1", "selected_options": ["q1_opt2"], "custom_text": ""},
            {"question_id": "q2", "selected_options": ["q2_opt2"], "custom_text": ""},
        ],
    }
    by = payload["resolved_by"]
    assert by["surface"] == "rest"
    assert by["identity_id"] == (alice.user_id if auth_enabled else SYNTHETIC_USER_ID)
    resumes = ok(client.get(f"/api/v1/sessions/{alice.session_id}/resumes", headers=alice.headers))
    [resume] = resumes["resumes"]
    # Made at the claim and made again from the rows: the same bytes (Ed25519 is deterministic).
    assert resume["metadata"]["receipt"] == receipt
    assert ok(client.get(_url(pending_id), headers=alice.headers)) == receipt


def test_a_rejection_receipt_says_rejected(client: TestClient, alice: Caller) -> None:
    pending_id = ask(client, alice)
    url = f"/api/v1/clarification/{pending_id}/respond"
    ok(client.post(url, json={"rejected": True, "reject_reason": "no"}, headers=alice.headers))
    receipt = ok(client.get(_url(pending_id), headers=alice.headers))
    payload = verified(receipt, ok(client.get(KEYS)), request_id=pending_id)
    assert payload["outcome"] == {"status": "rejected"}


def test_no_receipt_for_an_open_bundle_and_none_for_a_caller_who_may_not_see_it(
    client: TestClient, alice: Caller, bob: Caller, auth_enabled: bool
) -> None:
    pending_id = ask(client, alice)
    open_bundle = client.get(_url(pending_id), headers=alice.headers)
    assert open_bundle.status_code == 409
    assert "not resolved" in error_of(open_bundle)
    missing = client.get(_url("no-such-bundle"), headers=alice.headers)
    assert missing.status_code == 404
    if auth_enabled:  # A3: a foreign bundle reads exactly like a missing one
        foreign = client.get(_url(pending_id), headers=bob.headers)
        assert (foreign.status_code, foreign.json()) == (404, missing.json())
        assert client.get(_url(pending_id)).status_code == 401


def test_the_published_keys_are_the_ring_signing_key_first() -> None:
    ring = Ed25519KeyRing.of([("new", bytes(range(50, 82))), ("old", bytes(range(7, 39)))])
    world = RestWorld.build(auth_enabled=True, receipt_signer=ring)
    with TestClient(world.app, base_url="http://127.0.0.1:8765") as client:
        published = ok(client.get(KEYS))
    assert parse_keys(published) == ring.public_keys()
    assert [key["kid"] for key in published["keys"]] == ["new", "old"]


def test_without_a_signer_there_are_no_receipts() -> None:
    world = RestWorld.build(auth_enabled=False)
    with TestClient(world.app, base_url="http://127.0.0.1:8765") as client:
        assert client.get(KEYS).status_code == 404
        assert client.get(_url("x")).status_code == 404


@pytest.mark.anyio
@pytest.mark.parametrize("signed", [True, False], ids=["receipts", "no-receipts"])
async def test_the_wait_links_to_the_receipt_of_what_it_returned(
    auth_enabled: bool, signed: bool
) -> None:
    """The wait's body stays upstream's (A4); its ``Link`` header names the receipt — only
    where receipts are signed."""
    waiters = SignallingWaiters()
    signer = SIGNER if signed else None
    world = RestWorld.build(auth_enabled=auth_enabled, waiters=waiters, receipt_signer=signer)
    async with async_client(world.app) as client:
        caller = await asetup_caller(client, world, "alice")
        pending_id = await aask(client, caller)
        waited: dict[str, Any] = {}

        async def wait() -> None:
            url = f"/api/v1/clarification/{pending_id}/wait"
            waited["response"] = await client.get(url, headers=caller.headers)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await waiters.entered(pending_id).wait()
                ok(
                    await client.post(
                        f"/api/v1/clarification/{pending_id}/respond",
                        json={"answers": answers()},
                        headers=caller.headers,
                    )
                )
        response = waited["response"]
        assert set(ok(response)) == {"pending_id", "answers", "responded_at"}
        if not signed:
            assert "link" not in response.headers
            return
        assert response.headers["link"] == '<receipt>; rel="receipt"'
        linked = str(response.url.join("receipt"))
        assert linked.endswith(_url(pending_id))
        receipt = ok(await client.get(linked, headers=caller.headers))
        payload = verified(receipt, ok(await client.get(KEYS)), request_id=pending_id)
        assert payload["resolved_at"].startswith(ok(response)["responded_at"].rstrip("Z"))


@pytest.fixture(
    name="store_url", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def fixture_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'clarion.db'}"
    return str(request.getfixturevalue("postgres_database_url"))


def test_the_receipt_made_at_the_claim_is_the_one_made_later_from_each_store(
    store_url: str,
) -> None:
    """Nothing is stored for a receipt: what the resume carried (signed from the claim's own
    values) must be byte for byte what a later read of the rows signs — on SQLite and
    PostgreSQL too, whose timestamps go through their own column types — and after a restart
    (a new process, the same key)."""
    engine = create_engine(store_url)
    upgrade_database(engine)
    try:
        world = RestWorld.build(auth_enabled=False, ports=sql_ports(engine), receipt_signer=SIGNER)
        with TestClient(world.app, base_url=LOCAL_URL) as client:
            caller = setup_caller(client, world, "alice")
            pending_id = ask(client, caller, count=3)
            url = f"/api/v1/clarification/{pending_id}/respond"
            body = {"answers": answers(3, text="  ünïcode ✓ ")}
            ok(client.post(url, json=body, headers=caller.headers))
            path = f"/api/v1/sessions/{caller.session_id}/resumes"
            [resume] = ok(client.get(path, headers=caller.headers))["resumes"]
        restarted = RestWorld.build(
            auth_enabled=False, ports=sql_ports(engine), receipt_signer=SIGNER
        )
        with TestClient(restarted.app, base_url=LOCAL_URL) as client:
            receipt = ok(client.get(_url(pending_id)))
            published = ok(client.get(KEYS))
    finally:
        engine.dispose()
    assert resume["metadata"]["receipt"] == receipt
    payload = verified(receipt, published, request_id=pending_id)
    assert payload["outcome"]["answers"][0]["custom_text"] == "ünïcode ✓"
