"""``clarion tokens list``, ``clarion tokens revoke`` and ``clarion users deactivate`` (issue
14): they write to the server's database like ``users create``, on SQLite and PostgreSQL, and
what they revoke or deactivate stops authenticating at once."""

from __future__ import annotations

import json

import anyio
import pytest

from clarion.app.root.compose import Clarion
from clarion.domain.errors import NotFound
from tests.integration.cli.support import run_cli


def _one_error_line(err: str, text: str) -> None:
    assert err.startswith("clarion: error: ")
    assert text in err
    assert err.count("\n") == 1


def test_tokens_list_shows_every_token_and_session_of_a_user_never_their_text(
    database_url: str, clarion: Clarion, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ("--database-url", database_url)
    code, out, _ = run_cli(capsys, "users", "create", "ada", *db)
    assert code == 0
    ada = out.strip()
    _, out, _ = run_cli(capsys, "tokens", "create", ada, "--name", "laptop", *db)
    laptop = out.strip()
    run_cli(capsys, "tokens", "create", ada, "--name", "session:ci", "--expires-in-days", "1", *db)
    session = clarion.authentication.login(laptop)
    assert session is not None

    code, out, err = run_cli(capsys, "tokens", "list", ada, "--json", *db)
    assert (code, err) == (0, "")
    listed = json.loads(out)
    assert (listed["user_id"], listed["user_active"]) == (ada, True)
    rows = {row["name"] or row["kind"]: row for row in listed["tokens"]}
    assert set(rows) == {"laptop", "session:ci", "session"}
    assert rows["laptop"]["kind"] == rows["session:ci"]["kind"] == "pat"
    assert rows["session"]["parent_id"] == rows["laptop"]["id"]
    assert {row["status"] for row in rows.values()} == {"active"}
    assert rows["laptop"]["expires_at"] is None
    assert rows["session:ci"]["expires_at"] is not None
    assert laptop not in out
    assert session.cookie not in out

    code, out, _ = run_cli(capsys, "tokens", "list", ada, *db)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"user {ada} (ada): active"
    assert len(lines) == 4
    assert all(row["id"] in out for row in rows.values())
    assert f"of token {rows['laptop']['id']}" in out
    assert laptop not in out

    _, out, _ = run_cli(capsys, "users", "create", "bob", *db)
    code, out, _ = run_cli(capsys, "tokens", "list", out.strip(), *db)
    assert (code, out.splitlines()[1:]) == (0, ["No tokens."])

    code, _, err = run_cli(capsys, "tokens", "list", "nobody", *db)
    assert code == 1
    _one_error_line(err, "user not found: nobody")


def test_tokens_revoke_ends_a_token_and_its_sessions_at_once(
    database_url: str, clarion: Clarion, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ("--database-url", database_url)
    auth = clarion.authentication
    ada = auth.create_user("ada")
    revoked, kept = auth.issue_token(ada.id), auth.issue_token(ada.id)
    opened, other = auth.login(revoked.token), auth.login(kept.token)
    assert opened is not None
    assert other is not None

    code, out, _ = run_cli(capsys, "tokens", "revoke", revoked.record.id, *db)
    assert code == 0
    assert out == f"revoked {revoked.record.id} (browser sessions opened with it end too)\n"
    assert auth.resolve_bearer(revoked.token) is None
    assert auth.resolve_session(opened.cookie) is None
    assert auth.resolve_bearer(kept.token) is not None
    assert auth.resolve_session(other.cookie) is not None

    code, out, _ = run_cli(capsys, "tokens", "revoke", revoked.record.id, *db)
    assert (code, out) == (0, f"{revoked.record.id} was already revoked\n")

    other_record = next(t for t in auth.list_tokens(ada.id) if t.parent_id == kept.record.id)
    code, out, _ = run_cli(capsys, "tokens", "revoke", other_record.id, *db)
    assert (code, out) == (0, f"ended browser session {other_record.id}\n")
    assert auth.resolve_session(other.cookie) is None
    assert auth.resolve_bearer(kept.token) is not None

    _, out, _ = run_cli(capsys, "tokens", "list", ada.id, "--json", *db)
    statuses = {row["id"]: row["status"] for row in json.loads(out)["tokens"]}
    assert statuses[revoked.record.id] == "revoked"
    assert statuses[kept.record.id] == "active"

    code, _, err = run_cli(capsys, "tokens", "revoke", "no-such-token", *db)
    assert code == 1
    _one_error_line(err, "token not found: no-such-token")


def test_users_deactivate_stops_tokens_sessions_and_agent_tokens(
    database_url: str, clarion: Clarion, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ("--database-url", database_url)
    auth, host = clarion.authentication, clarion.services.host
    ada, bob = auth.create_user("ada"), auth.create_user("bob")
    token, bobs = auth.issue_token(ada.id).token, auth.issue_token(bob.id).token
    session = auth.login(token)
    assert session is not None
    identity = auth.resolve_bearer(token)
    assert identity is not None

    async def start_agent() -> tuple[str, str]:
        workspace = await host.create_workspace(identity, "ws")
        task = await host.create_task(identity, "task", workspace.id)
        created = await host.create_session(identity, task.id)
        assert await host.authenticate_agent(created.session.id, created.agent_token)
        return created.session.id, created.agent_token

    session_id, agent_token = anyio.run(start_agent)

    code, out, _ = run_cli(capsys, "users", "deactivate", ada.id, *db)
    assert (code, out) == (0, f"deactivated {ada.id}\n")
    assert auth.resolve_bearer(token) is None
    assert auth.resolve_session(session.cookie) is None
    assert auth.login(token) is None
    with pytest.raises(NotFound):
        anyio.run(host.authenticate_agent, session_id, agent_token)
    assert auth.resolve_bearer(bobs) is not None

    code, out, _ = run_cli(capsys, "users", "deactivate", ada.id, *db)
    assert (code, out) == (0, f"{ada.id} was already deactivated\n")
    _, out, _ = run_cli(capsys, "tokens", "list", ada.id, *db)
    assert out.splitlines()[0] == f"user {ada.id} (ada): deactivated"

    code, _, err = run_cli(capsys, "users", "deactivate", "nobody", *db)
    assert code == 1
    _one_error_line(err, "user not found: nobody")
