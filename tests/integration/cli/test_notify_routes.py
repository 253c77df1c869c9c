"""``clarion notify add|list|remove`` (issue #17): routes are stored in the server's database,
read back by the server's own store, and bad input is refused naming the problem."""

from __future__ import annotations

import json

import pytest

from clarion.app.root.compose import Clarion
from tests.integration.cli.support import run_cli


def test_added_routes_are_listed_and_read_by_the_server_and_removed(
    capsys: pytest.CaptureFixture[str], database_url: str, clarion: Clarion
) -> None:
    db = ["--database-url", database_url]
    code, out, _ = run_cli(
        capsys, "notify", "add", "--workspace", "W", "email:alice@example.com", *db
    )
    assert code == 0
    email_id = out.strip()
    code, out, _ = run_cli(
        capsys,
        "notify",
        "add",
        "webhook:https://hooks.example/x",
        "--remind-after",
        "600",
        "--deadline-after",
        "3600",
        "--on-deadline",
        "default:q1_opt1",
        *db,
    )
    assert code == 0
    hook_id = out.strip()
    code, out, _ = run_cli(capsys, "notify", "list", "--json", *db)
    listed = {route["id"]: route for route in json.loads(out)}
    assert listed[email_id]["workspace_id"] == "W"
    assert listed[hook_id]["on_deadline"] == "default:q1_opt1"
    store = clarion.storage.notifications
    assert store is not None
    assert [r.id for r in store.routes_for("W")] == [email_id]
    assert [r.remind_after_s for r in store.routes_for("")] == [600.0]
    code, out, _ = run_cli(capsys, "notify", "remove", email_id, *db)
    assert code == 0
    assert store.get_route(email_id) is None
    code, _, err = run_cli(capsys, "notify", "remove", email_id, *db)
    assert code != 0
    assert email_id in err


@pytest.mark.parametrize(
    "argv",
    [
        ["bogus:x"],
        ["email:not-an-address"],
        ["webhook:ftp://x"],
        ["webhook:https://h.example/x", "--on-deadline", "expire"],
        ["webhook:https://h.example/x", "--events", "answerable,bogus"],
        ["webhook:https://h.example/x", "--escalate-after", "60"],
    ],
)
def test_a_bad_route_is_refused_and_nothing_is_stored(
    capsys: pytest.CaptureFixture[str], database_url: str, clarion: Clarion, argv: list[str]
) -> None:
    code, _, err = run_cli(capsys, "notify", "add", *argv, "--database-url", database_url)
    assert code != 0
    assert err.startswith("clarion: error:")
    store = clarion.storage.notifications
    assert store is not None
    assert store.list_routes() == ()
