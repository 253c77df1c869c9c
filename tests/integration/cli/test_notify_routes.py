"""``clarion notify add|list|remove`` (issue #17): routes are stored in the server's database,
read back by the server's own store, and bad input is refused naming the problem."""

from __future__ import annotations

import json

import pytest

from clarion.app.root.compose import Clarion
from tests.integration.cli.support import run_cli


def test_added_routes_are_listed_and_read_by_the_server_and_removed(
    capsys: pytest.CaptureFixture[str],
    database_url: str,
    clarion: Clarion,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = ["--database-url", database_url]
    monkeypatch.setenv("CLARION_SMTP_HOST", "smtp.example.com")
    workspace = clarion.storage.host.create_workspace("W")
    code, out, _ = run_cli(
        capsys, "notify", "add", "--workspace", workspace.id, "email:alice@example.com", *db
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
    assert listed[email_id]["workspace_id"] == workspace.id
    assert listed[hook_id]["on_deadline"] == "default:q1_opt1"
    # #29: a webhook route is signed by default with a secret of its own.
    assert len(listed[hook_id]["secret"]) >= 40
    assert listed[email_id]["secret"] == ""
    store = clarion.storage.notifications
    assert store is not None
    assert [r.id for r in store.routes_for(workspace.id)] == [email_id]
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


def test_the_operator_is_refused_an_internal_webhook_unless_allowed(
    capsys: pytest.CaptureFixture[str], database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#29 S4: `clarion notify add` refuses a loopback or metadata destination, naming the
    setting that allows it; with CLARION_OUTBOUND_ALLOW it is stored, and the secret is on
    stderr (stdout stays the id alone)."""
    db = ["--database-url", database_url]
    assert run_cli(capsys, "db", "upgrade", *db)[0] == 0
    for channel in ("webhook:http://127.0.0.1:9/x", "webhook:http://169.254.169.254/"):
        code, _, err = run_cli(capsys, "notify", "add", channel, *db)
        assert code != 0
        assert "CLARION_OUTBOUND_ALLOW" in err
    monkeypatch.setenv("CLARION_OUTBOUND_ALLOW", "127.0.0.1")
    code, out, err = run_cli(capsys, "notify", "add", "webhook:http://127.0.0.1:9/x", *db)
    assert code == 0, err
    assert len(out.split()) == 1
    assert "signing secret: " in err
