"""The ``clarion`` command: every subcommand parses, works, and fails with one clear line."""

from __future__ import annotations

import contextlib
import getpass
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clarion.app.root.cli import main
from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.resolved_by import Surface
from tests.sockets import free_port, serving_in_thread

COMMANDS = [
    [],
    ["serve"],
    ["db"],
    ["db", "upgrade"],
    ["users"],
    ["users", "create"],
    ["users", "list"],
    ["users", "deactivate"],
    ["tokens"],
    ["tokens", "create"],
    ["tokens", "list"],
    ["tokens", "revoke"],
    ["questions"],
    ["questions", "list"],
    ["questions", "answer"],
    ["groups", "create"],
    ["groups", "add-member"],
    ["approvals", "list"],
    ["approvals", "decide"],
    ["demo"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "clarion")
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    assert "usage: clarion" in capsys.readouterr().out


def test_a_missing_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["users"])
    assert exited.value.code == 2
    assert "required" in capsys.readouterr().err


@pytest.fixture(name="database_url")
def fixture_database_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


def test_db_upgrade_migrates_and_reports_the_revision(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "upgrade", "--database-url", database_url]) == 0
    assert "revision" in capsys.readouterr().out
    assert main(["db", "upgrade", "--database-url", database_url]) == 0  # idempotent


def test_users_and_tokens_are_created_and_the_token_authenticates(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "upgrade", "--database-url", database_url]) == 0  # creates the file
    capsys.readouterr()
    assert main(["users", "create", "ada", "--database-url", database_url]) == 0
    user_id = capsys.readouterr().out.strip()
    assert user_id
    assert (
        main(["tokens", "create", user_id, "--name", "laptop", "--database-url", database_url]) == 0
    )
    token = capsys.readouterr().out.strip()
    assert token.startswith("clarion_pat_")
    clarion = build_clarion(Settings(database_url=database_url))
    try:
        identity = clarion.authentication.resolve_bearer(token)
    finally:
        clarion.close()
    assert identity is not None
    assert identity.user_id == user_id


def test_a_token_for_an_unknown_user_fails_with_one_line(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "upgrade", "--database-url", database_url]) == 0
    capsys.readouterr()
    assert main(["tokens", "create", "nobody", "--database-url", database_url]) == 1
    err = capsys.readouterr().err
    assert "does not exist" not in err
    assert err.startswith("clarion: error: ")
    assert err.count("\n") == 1


def test_an_unreachable_server_fails_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["questions", "list", "--url", f"http://127.0.0.1:{free_port()}"]) == 1
    err = capsys.readouterr().err
    assert "cannot reach" in err
    assert err.count("\n") == 1


def test_answer_flags_that_contradict_each_other_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["questions", "answer", "p1", "--reject", "--text", "q1=hi"]) == 1
    assert "--reject" in capsys.readouterr().err
    assert main(["questions", "answer", "p1"]) == 1
    assert "--select" in capsys.readouterr().err
    assert main(["questions", "answer", "p1", "--select", "noequals"]) == 1
    assert "QUESTION=VALUE" in capsys.readouterr().err


@contextlib.contextmanager
def _serve(database_url: str, *, auth_enabled: bool = False) -> Iterator[tuple[str, Clarion]]:
    clarion = build_clarion(Settings(database_url=database_url, auth_enabled=auth_enabled))
    try:
        with serving_in_thread(clarion.asgi_app) as url:
            yield url, clarion
    finally:
        clarion.close()


def _recorded_surface(clarion: Clarion, pending_id: str) -> Surface | None:
    bundle = clarion.storage.claims.load_bundle(pending_id)
    assert bundle is not None
    surfaces = {row.resolved_by.surface for row in bundle.rows if row.resolved_by is not None}
    return surfaces.pop() if len(surfaces) == 1 else None


@pytest.mark.server
def test_questions_list_and_answer_by_label_against_a_running_server(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import httpx2

    with _serve(database_url) as (url, clarion):
        task = httpx2.post(f"{url}/api/v1/tasks", json={"title": "t"}).json()
        session = httpx2.post(f"{url}/api/v1/tasks/{task['id']}/sessions", json={}).json()
        created = httpx2.post(
            f"{url}/api/v1/clarification/request",
            json={
                "session_id": session["id"],
                "questions": [
                    {
                        "prompt": "Ship it?",
                        "options": [
                            {"label": "Yes", "description": "ship"},
                            {"label": "No", "description": "wait"},
                        ],
                    },
                    {
                        "prompt": "Why?",
                        "options": [
                            {"label": "A", "description": "a"},
                            {"label": "B", "description": "b"},
                        ],
                    },
                ],
            },
        ).json()
        pending_id = created["pending_id"]

        assert main(["questions", "list", "--url", url]) == 0
        listing = capsys.readouterr().out
        assert pending_id in listing
        assert "Ship it?" in listing

        assert (
            main(
                [
                    "questions",
                    "answer",
                    pending_id,
                    "--url",
                    url,
                    "--select",
                    "q1=yes",
                    "--text",
                    "q2=because",
                ]
            )
            == 0
        )
        out = capsys.readouterr().out
        assert "you answered it" in out
        assert "q1: q1_opt1" in out
        assert _recorded_surface(clarion, pending_id) is Surface.CLI  # issue #20

        assert main(["questions", "answer", pending_id, "--url", url, "--reject"]) == 0
        assert "already settled" in capsys.readouterr().out  # R2: the winner's replay

        # A settled bundle has left the pending list, so labels cannot be resolved any more.
        assert main(["questions", "answer", pending_id, "--url", url, "--select", "q1=yes"]) == 1
        assert "give option ids" in capsys.readouterr().err
        assert (
            main(
                [
                    "questions",
                    "answer",
                    pending_id,
                    "--url",
                    url,
                    "--select",
                    "q1=q1_opt2",
                    "--select",
                    "q2=q2_opt1",
                ]
            )
            == 0
        )
        assert "already settled" in capsys.readouterr().out  # ids need no lookup: replay

        assert main(["questions", "list", "--url", url, "--json"]) == 0
        assert '"count": 0' in capsys.readouterr().out


@pytest.mark.server
def test_the_client_takes_its_token_from_the_environment_or_a_hidden_prompt(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14: ``CLARION_TOKEN`` or ``--ask-token`` (getpass) keep the token out of ``ps``."""
    monkeypatch.delenv("CLARION_TOKEN", raising=False)
    with _serve(database_url, auth_enabled=True) as (url, clarion):
        user = clarion.authentication.create_user("ada")
        token = clarion.authentication.issue_token(user.id).token
        listing = ["questions", "list", "--url", url]

        assert main(listing) == 1
        assert "401" in capsys.readouterr().err

        monkeypatch.setenv("CLARION_TOKEN", token)
        assert main(listing) == 0
        assert capsys.readouterr().out == "No pending questions.\n"
        monkeypatch.delenv("CLARION_TOKEN")

        prompts: list[str] = []

        def typed(prompt: str) -> str:
            prompts.append(prompt)
            return token

        monkeypatch.setattr(getpass, "getpass", typed)
        monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
        assert main([*listing, "--ask-token"]) == 0
        assert capsys.readouterr().out == "No pending questions.\n"
        assert prompts == ["Clarion token: "]

        monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
        assert main([*listing, "--ask-token"]) == 1
        err = capsys.readouterr().err
        assert "--ask-token needs an interactive terminal" in err
        assert err.count("\n") == 1
        assert prompts == ["Clarion token: "]  # never prompted without a terminal

    with pytest.raises(SystemExit) as exited:
        main([*listing, "--token", token, "--ask-token"])
    assert exited.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


@pytest.mark.server
def test_clarion_demo_tells_the_whole_story_and_exits_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "Demo finished" in out
    assert '"claimed": false' in out
    # Issue #17: the local webhook receiver was told, with a valid signature, and then told
    # the bundle was answered.
    assert "The webhook receiver is told, with a valid signature" in out
    assert '"event": "resolved"' in out
    # Issues #17 and #20: a detached bundle is answered through a signed answer link, the
    # resolved list records each surface, and the scrape counts them.
    assert "An e-mail's signed answer link opens a page" in out
    assert '"surface": "email"' in out
    assert 'clarion_bundles_resolved_total{outcome=\\"answered\\",surface=\\"email\\"} 1.0' in out
    # The MCP tool timing counts the external client's one answer.
    assert (
        'clarion_mcp_tool_call_duration_seconds_count{tool=\\"answer_question_kandev\\"} 1.0' in out
    )


@pytest.mark.server  # a valid port is bound before the build-time settings are checked
@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--limit-concurrency", "0"], "--limit-concurrency"),
        (["--header-timeout", "soon"], "--header-timeout"),
        (["--keep-alive-timeout", "-1"], "--keep-alive-timeout"),
        (["--allowed-hosts", "https://clarion.example.com"], "https://clarion.example.com"),
    ],
)
def test_bad_serve_limits_fail_with_one_line_naming_them(
    database_url: str, flags: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Port 0: the port is taken before the application is built, and 8765 may be in use.
    assert main(["serve", "--port", "0", "--database-url", database_url, *flags]) == 1
    err = capsys.readouterr().err
    assert err.startswith("clarion: error: ")
    assert named in err
    assert err.count("\n") == 1


def _one_question_bundle(url: str, headers: dict[str, str]) -> str:
    import httpx2

    workspace = httpx2.post(f"{url}/api/v1/workspaces", json={"name": "w"}, headers=headers)
    task = httpx2.post(
        f"{url}/api/v1/tasks",
        json={"title": "t", "workspace_id": workspace.json()["id"]},
        headers=headers,
    ).json()
    session = httpx2.post(
        f"{url}/api/v1/tasks/{task['id']}/sessions", json={}, headers=headers
    ).json()
    created = httpx2.post(
        f"{url}/api/v1/clarification/request",
        json={
            "session_id": session["id"],
            "questions": [
                {
                    "prompt": "Ship it?",
                    "options": [
                        {"label": "Yes", "description": "ship"},
                        {"label": "No", "description": "wait"},
                    ],
                }
            ],
        },
        headers=headers,
    ).json()
    pending_id = created["pending_id"]
    assert isinstance(pending_id, str)
    return pending_id


@pytest.mark.server
def test_questions_history_shows_who_answered_where_and_only_what_the_caller_may_see(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #20: history goes through the REST client like the other commands."""
    with _serve(database_url, auth_enabled=True) as (url, clarion):
        auth = clarion.authentication
        alice = auth.issue_token(auth.create_user("Alice").id).token
        bob = auth.issue_token(auth.create_user("Bob").id).token
        pending_id = _one_question_bundle(url, {"Authorization": f"Bearer {alice}"})
        monkeypatch.setenv("CLARION_TOKEN", alice)
        assert main(["questions", "answer", pending_id, "--url", url, "--select", "q1=yes"]) == 0
        capsys.readouterr()
        assert main(["questions", "history", "--url", url]) == 0
        out = capsys.readouterr().out
        assert pending_id in out
        assert "answered  by Alice (user) via cli" in out
        assert "q1: Ship it? → q1_opt1" in out
        monkeypatch.setenv("CLARION_TOKEN", bob)
        assert main(["questions", "history", "--url", url, "--json"]) == 0
        assert '"count": 0' in capsys.readouterr().out  # foreign ≡ absent
        assert main(["questions", "history", "--url", url, "--limit", "0"]) == 1


@pytest.mark.server
def test_audit_export_writes_every_resolution_as_json_lines_from_the_database(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #20: the operator's export reads the database directly and sees every user's."""
    import json

    with _serve(database_url, auth_enabled=True) as (url, clarion):
        auth = clarion.authentication
        tokens = [auth.issue_token(auth.create_user(name).id).token for name in ("A", "B")]
        answered = []
        for token in tokens:
            pending_id = _one_question_bundle(url, {"Authorization": f"Bearer {token}"})
            monkeypatch.setenv("CLARION_TOKEN", token)
            assert main(["questions", "answer", pending_id, "--url", url, "--reject"]) == 0
            answered.append(pending_id)
        _one_question_bundle(url, {"Authorization": f"Bearer {tokens[0]}"})  # still pending
    capsys.readouterr()
    assert main(["audit", "export", "--database-url", database_url, "--format", "jsonl"]) == 0
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert [line["pending_id"] for line in lines] == answered[::-1]  # newest first
    assert {line["resolved_by"]["display_name"] for line in lines} == {"A", "B"}
    assert all(line["status"] == "rejected" for line in lines)
    assert "exported 2 resolutions" in captured.err
    since = lines[0]["resolved_at"]
    assert main(["audit", "export", "--database-url", database_url, "--since", since]) == 0
    assert [json.loads(x)["pending_id"] for x in capsys.readouterr().out.splitlines()] == [
        answered[1]
    ]
    assert main(["audit", "export", "--database-url", database_url, "--since", "yesterday"]) == 1
    assert "--since" in capsys.readouterr().err


@pytest.mark.server
def test_a_question_closed_without_an_answer_is_in_the_history_and_a_late_answer_says_why(
    database_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """#30: a bundle a newer turn superseded is listed with why, and answering it is one
    clear line; the audit export adds it only when asked."""
    import json

    import httpx2

    with _serve(database_url, auth_enabled=True) as (url, clarion):
        auth = clarion.authentication
        alice = auth.issue_token(auth.create_user("Alice").id).token
        headers = {"Authorization": f"Bearer {alice}"}
        pending_id = _one_question_bundle(url, headers)
        bundle = httpx2.get(f"{url}/api/v1/clarification/pending", headers=headers).json()
        session_id = bundle["bundles"][0]["session_id"]
        turn = httpx2.post(f"{url}/api/v1/sessions/{session_id}/turns", headers=headers)
        assert turn.status_code == 201
        monkeypatch.setenv("CLARION_TOKEN", alice)
        capsys.readouterr()
        assert main(["questions", "history", "--url", url]) == 0
        out = capsys.readouterr().out
        assert f"{pending_id}  closed without an answer: the agent moved on to a newer turn" in out
        assert "q1: Ship it?" in out
        assert main(["questions", "history", "--url", url, "--answered-only"]) == 0
        assert "No resolved questions." in capsys.readouterr().out
        late = ["questions", "answer", pending_id, "--url", url, "--select", "q1=q1_opt1"]
        assert main(late) == 1
        err = capsys.readouterr().err
        assert err == (
            f"clarion: error: {pending_id} was closed without an answer (the agent moved on to "
            "a newer turn); nothing was recorded\n"
        )
    assert main(["audit", "export", "--database-url", database_url]) == 0
    assert capsys.readouterr().out == ""
    assert main(["audit", "export", "--database-url", database_url, "--include-closed"]) == 0
    [line] = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert (line["pending_id"], line["status"], line["closed_reason"]) == (
        pending_id,
        "closed",
        "superseded",
    )
