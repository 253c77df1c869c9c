"""``clarion groups …`` (the operator, on the database) and ``clarion approvals …`` (a person,
over REST) — issue #33."""

from __future__ import annotations

import json

import httpx2
import pytest

from clarion.app.root.cli.main import main
from clarion.app.root.compose import Clarion
from clarion.domain.resolved_by import Surface
from tests.integration.cli.support import run_cli
from tests.integration.cli.test_cli import _serve


def test_groups_are_created_filled_listed_and_deleted(
    capsys: pytest.CaptureFixture[str], database_url: str, clarion: Clarion
) -> None:
    db = ["--database-url", database_url]
    erin = clarion.authentication.create_user("erin")
    code, out, _ = run_cli(capsys, "groups", "create", "oncall", *db)
    assert code == 0
    group_id = out.strip()
    assert run_cli(capsys, "groups", "add-member", "oncall", "erin", *db)[1] == "oncall: erin\n"
    code, out, _ = run_cli(capsys, "groups", "list", "--json", *db)
    (listed,) = json.loads(out)
    assert (listed["id"], listed["members"]) == (group_id, ["erin"])
    # The server reads the same group.
    assert clarion.storage.groups is not None
    assert clarion.storage.groups.groups_of(erin.id) == frozenset({group_id})
    code, _, err = run_cli(capsys, "groups", "create", "OnCall", *db)
    assert code == 1
    assert "already exists" in err
    code, _, err = run_cli(capsys, "groups", "add-member", "oncall", "nobody", *db)
    assert (code, "user not found" in err) == (1, True)
    assert run_cli(capsys, "groups", "remove-member", "oncall", erin.id, *db)[0] == 0
    assert run_cli(capsys, "groups", "delete", "oncall", *db)[0] == 0
    code, _, err = run_cli(capsys, "groups", "delete", "oncall", *db)
    assert (code, err.strip()) == (1, "clarion: error: group not found: oncall")


@pytest.mark.server
def test_approvals_are_listed_shown_and_decided_from_a_shell(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with _serve(database_url, auth_enabled=True) as (url, clarion):
        auth = clarion.authentication
        admin = auth.create_user("root", is_admin=True)
        root = {"Authorization": f"Bearer {auth.issue_token(admin.id).token}"}
        erin = auth.issue_token(auth.create_user("erin").id).token
        workspace = httpx2.post(
            f"{url}/api/v1/workspaces", json={"name": "w", "owner_id": ""}, headers=root
        ).json()
        task = httpx2.post(
            f"{url}/api/v1/tasks",
            json={"title": "t", "workspace_id": workspace["id"]},
            headers=root,
        ).json()
        session = httpx2.post(
            f"{url}/api/v1/tasks/{task['id']}/sessions", json={}, headers=root
        ).json()
        action = {"name": "deploy", "arguments": {"env": "prod", "version": "1.2"}}
        view = httpx2.post(
            f"{url}/api/v1/approvals/request",
            json={"session_id": session["id"], "action": action, "reason": "release"},
            headers=root,
        ).json()
        pending_id = view["pending_id"]
        monkeypatch.setenv("CLARION_TOKEN", erin)
        assert main(["approvals", "list", "--url", url]) == 0
        out = capsys.readouterr().out
        assert f"{pending_id}  pending  deploy  (0 of 1 approvals)" in out
        assert '"env": "prod"' in out
        assert (
            main(["approvals", "decide", pending_id, "deny", "--constraint", "x=any", "--url", url])
            == 1
        )
        assert "--allow-for" in capsys.readouterr().err
        code = main(
            [
                "approvals",
                "decide",
                pending_id,
                "approve",
                "--url",
                url,
                "--allow-for",
                "30",
                "--constraint",
                "version=any",
            ]
        )
        assert code == 0
        out = capsys.readouterr().out
        assert f"{pending_id}: approved — your vote counted" in out
        assert "standing approval" in out
        bundle = clarion.storage.claims.load_bundle(pending_id)
        assert bundle is not None
        assert {row.resolved_by.surface for row in bundle.rows if row.resolved_by} == {Surface.CLI}
        assert main(["approvals", "show", pending_id, "--url", url, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["decision"] == "approve"
        assert main(["approvals", "standing", "--url", url, "--json"]) == 0
        (standing,) = json.loads(capsys.readouterr().out)["standing_approvals"]
        assert standing["constraints"] == {"env": {"equals": "prod"}, "version": {"any": True}}
        assert main(["approvals", "revoke", standing["id"], "--url", url]) == 0
        assert capsys.readouterr().out.strip() == f"revoked {standing['id']}"
        assert main(["approvals", "list", "--decided", "--url", url]) == 0
        assert pending_id in capsys.readouterr().out
