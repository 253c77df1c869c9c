"""#30: the CLI refuses a newcomer's mistakes with one ``clarion: error:`` line each, storing
nothing — a route for a workspace that does not exist, an e-mail or Slack route this
deployment cannot deliver, a second active user of one name, a token nobody could use, an
answer to a question the bundle does not have — and lists the users (``clarion users list``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings
from tests.integration.cli.support import run_cli
from tests.sockets import serving_in_thread


def _one_error_line(err: str) -> str:
    assert err.count("\n") == 1, err
    assert err.startswith("clarion: error: "), err
    return err.removeprefix("clarion: error: ").rstrip("\n")


@pytest.fixture(name="db")
def fixture_db(database_url: str, clarion: Clarion) -> list[str]:
    """``--database-url`` of a migrated database (``clarion`` migrated it)."""
    return ["--database-url", database_url]


def _routes(clarion: Clarion) -> int:
    store = clarion.storage.notifications
    assert store is not None
    return len(store.list_routes())


def test_a_route_for_a_workspace_that_does_not_exist_is_refused(
    capsys: pytest.CaptureFixture[str], db: list[str], clarion: Clarion
) -> None:
    channel = "webhook:https://hooks.example/x"
    code, out, err = run_cli(capsys, "notify", "add", channel, "--workspace", "wrkspc", *db)
    assert (code, out) == (1, "")
    assert _one_error_line(err).startswith("workspace not found: wrkspc (--workspace takes")
    assert _routes(clarion) == 0
    workspace = clarion.storage.host.create_workspace("real")
    code, _, _ = run_cli(capsys, "notify", "add", channel, "--workspace", workspace.id, *db)
    assert code == 0
    assert _routes(clarion) == 1


@pytest.mark.parametrize(
    ("channel", "setting"),
    [("email:ops@example.com", "CLARION_SMTP_HOST"), ("slack:#ops", "CLARION_SLACK_BOT_TOKEN")],
)
def test_a_route_whose_channel_is_not_configured_is_refused_unless_forced(
    capsys: pytest.CaptureFixture[str],
    db: list[str],
    clarion: Clarion,
    channel: str,
    setting: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(setting, raising=False)
    code, out, err = run_cli(capsys, "notify", "add", channel, *db)
    assert (code, out) == (1, "")
    kind = channel.partition(":")[0]
    assert _one_error_line(err) == (
        f"{kind} routes cannot deliver: {setting} is not set, so every {kind} notification "
        "would fail — set it (docs/notifications.md), or add --force if the serving processes "
        "have it"
    )
    assert _routes(clarion) == 0
    # The serving processes may have the setting this shell lacks.
    assert run_cli(capsys, "notify", "add", channel, "--force", *db)[0] == 0
    monkeypatch.setenv(setting, "configured")
    assert run_cli(capsys, "notify", "add", channel, *db)[0] == 0
    assert _routes(clarion) == 2


def test_a_second_active_user_of_one_name_is_refused(
    capsys: pytest.CaptureFixture[str], db: list[str], clarion: Clarion
) -> None:
    code, out, _ = run_cli(capsys, "users", "create", "alice", *db)
    assert code == 0
    alice = out.strip()
    for name in ("alice", " Alice "):
        code, out, err = run_cli(capsys, "users", "create", name, *db)
        assert (code, out) == (1, "")
        assert _one_error_line(err) == (
            f"an active user named 'alice' exists already: {alice} (choose another name, or "
            "deactivate that user first)"
        )
    assert [user.name for user in clarion.authentication.list_users()] == ["alice"]
    # A deactivated user's name may be given again.
    assert run_cli(capsys, "users", "deactivate", alice, *db)[0] == 0
    code, out, _ = run_cli(capsys, "users", "create", "alice", *db)
    assert code == 0
    assert out.strip() != alice


def test_a_blank_user_name_is_refused(capsys: pytest.CaptureFixture[str], db: list[str]) -> None:
    code, _, err = run_cli(capsys, "users", "create", "  ", *db)
    assert code == 1
    assert _one_error_line(err) == "a user needs a name"


def test_a_token_for_a_deactivated_or_unknown_user_is_refused(
    capsys: pytest.CaptureFixture[str], db: list[str], clarion: Clarion
) -> None:
    user = clarion.authentication.create_user("bob")
    clarion.authentication.deactivate_user(user.id)
    code, out, err = run_cli(capsys, "tokens", "create", user.id, *db)
    assert (code, out) == (1, "")
    assert _one_error_line(err) == (
        f"user {user.id} (bob) is deactivated: a token for them would never authenticate"
    )
    assert clarion.authentication.list_tokens(user.id) == ()
    code, out, err = run_cli(capsys, "tokens", "create", "nobody", *db)
    assert (code, out) == (1, "")
    assert _one_error_line(err) == "user not found: nobody (see `clarion users list`)"


def test_users_list_shows_every_user_oldest_first_with_tokens_and_links(
    capsys: pytest.CaptureFixture[str], db: list[str], clarion: Clarion
) -> None:
    assert run_cli(capsys, "users", "list", *db)[1] == "No users.\n"
    assert run_cli(capsys, "users", "list", "--json", *db)[1] == "[]\n"
    ada = clarion.authentication.create_user("ada", is_admin=True)
    bob = clarion.authentication.create_user("bob")
    clarion.authentication.issue_token(ada.id)
    revoked = clarion.authentication.issue_token(ada.id)
    clarion.authentication.revoke_token(revoked.record.id)
    assert run_cli(capsys, "users", "link-slack", bob.id, "U0123ABCD", *db)[0] == 0
    clarion.authentication.deactivate_user(bob.id)
    code, out, _ = run_cli(capsys, "users", "list", "--json", *db)
    assert code == 0
    listed = json.loads(out)
    assert [
        (u["id"], u["name"], u["is_admin"], u["active"], u["live_tokens"], u["slack_accounts"])
        for u in listed
    ] == [(ada.id, "ada", True, True, 1, 0), (bob.id, "bob", False, False, 0, 1)]
    assert all(u["created_at"].endswith("Z") for u in listed)
    code, out, _ = run_cli(capsys, "users", "list", *db)
    lines = out.splitlines()
    assert lines[0].startswith(f"{ada.id}  ada  admin  active  created ")
    assert lines[0].endswith("1 live token(s)  0 Slack account(s)")
    assert lines[1].startswith(f"{bob.id}  bob  member  deactivated  created ")
    assert lines[1].endswith("0 live token(s)  1 Slack account(s)")


@pytest.fixture(name="server")
def fixture_server(tmp_path: Path) -> Iterator[str]:
    clarion = build_clarion(Settings(database_url=f"sqlite:///{tmp_path / 'answer.db'}"))
    try:
        with serving_in_thread(clarion.asgi_app) as url:
            yield url
    finally:
        clarion.close()


@pytest.mark.server
def test_an_answer_to_a_question_the_bundle_lacks_names_it_and_the_valid_ids(
    capsys: pytest.CaptureFixture[str], server: str
) -> None:
    task = httpx2.post(f"{server}/api/v1/tasks", json={"title": "t"}).json()
    session = httpx2.post(f"{server}/api/v1/tasks/{task['id']}/sessions", json={}).json()
    options = [{"label": "Yes", "description": "y"}, {"label": "No", "description": "n"}]
    created = httpx2.post(
        f"{server}/api/v1/clarification/request",
        json={
            "session_id": session["id"],
            "questions": [
                {"prompt": "Ship?", "options": options},
                {"prompt": "Now?", "options": options},
            ],
        },
    )
    pending_id = created.json()["pending_id"]
    code, out, err = run_cli(
        capsys, "questions", "answer", pending_id, "--select", "q9=Yes", "--url", server
    )
    assert (code, out) == (1, "")
    assert _one_error_line(err) == (
        f"bundle {pending_id} has no question 'q9'; its questions are q1, q2 (see "
        "`clarion questions list`)"
    )
    listed = httpx2.get(f"{server}/api/v1/clarification/pending").json()
    assert [bundle["pending_id"] for bundle in listed["bundles"]] == [pending_id]
