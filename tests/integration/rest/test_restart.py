"""R6 and L2 over HTTP: the application restarts over the same SQLite file between the ask
and the answer. The claim needs no memory of the first process; the answer, having no live
waiter any more, resumes the agent through the outbox."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from starlette.testclient import TestClient

from clarion.adapters.sql import create_engine, upgrade_database
from tests.integration.rest.harness import (
    LOCAL_URL,
    RestWorld,
    answers,
    ask,
    ok,
    setup_caller,
    sql_ports,
)


@contextmanager
def process(url: str) -> Iterator[tuple[RestWorld, TestClient]]:
    """One "process": its own engine, waiters, event bus and application over ``url``."""
    engine = create_engine(url)
    try:
        world = RestWorld.build(auth_enabled=True, ports=sql_ports(engine))
        with TestClient(world.app, base_url=LOCAL_URL) as client:
            yield world, client
    finally:
        engine.dispose()


def test_r6_a_bundle_asked_before_a_restart_is_answered_exactly_once_after_it(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'clarion.db'}"
    upgrade_database(url)
    with process(url) as (world, client):
        alice = setup_caller(client, world, "alice")
        pending_id = ask(client, alice, 2)
        login = ok(
            client.post(
                "/api/v1/auth/login",
                json={"token": alice.headers["Authorization"].removeprefix("Bearer ")},
            )
        )
        cookie = client.cookies["clarion_session"]

    with process(url) as (_, client):
        # Tokens and browser sessions are durable too.
        client.cookies.set("clarion_session", cookie)
        assert ok(client.get("/api/v1/auth/me"))["csrf_token"] == login["csrf_token"]
        client.cookies.clear()
        # L2: discovery reads durable rows, so the bundle is still listed.
        listed = ok(client.get("/api/v1/clarification/pending", headers=alice.headers))
        assert [bundle["pending_id"] for bundle in listed["bundles"]] == [pending_id]
        # A7: the live entry died with the first process.
        live = client.get(f"/api/v1/clarification/{pending_id}", headers=alice.headers)
        assert live.status_code == 404
        waited = client.get(f"/api/v1/clarification/{pending_id}/wait", headers=alice.headers)
        assert waited.status_code == 504
        url_respond = f"/api/v1/clarification/{pending_id}/respond"
        won = ok(client.post(url_respond, json={"answers": answers(2)}, headers=alice.headers))
        assert won["claimed"] is True
        again = ok(
            client.post(url_respond, json={"answers": answers(2, option=2)}, headers=alice.headers)
        )
        assert again["claimed"] is False
        assert again["response"] == won["response"]
        resumes = ok(
            client.get(f"/api/v1/sessions/{alice.session_id}/resumes", headers=alice.headers)
        )["resumes"]
        assert [resume["metadata"]["pending_id"] for resume in resumes] == [pending_id]
        gone = ok(client.get("/api/v1/clarification/pending", headers=alice.headers))
        assert gone == {"bundles": [], "count": 0, "next_cursor": ""}
