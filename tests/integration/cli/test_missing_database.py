"""#29: an administrative command pointed at a database that does not exist (a mistyped path,
a missing PostgreSQL database) fails with one ``clarion: error:`` line naming it and creates
nothing; only ``clarion db upgrade`` (and ``clarion serve``) create a SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.integration.cli.support import run_cli

COMMANDS = [
    ["audit", "export"],
    ["users", "create", "ada"],
    ["users", "list"],
    ["users", "deactivate", "u1"],
    ["users", "link-slack", "u1", "U0123ABCD"],
    ["users", "unlink-slack", "U0123ABCD"],
    ["users", "slack-links"],
    ["tokens", "create", "u1"],
    ["tokens", "list", "u1"],
    ["tokens", "revoke", "t1"],
    ["notify", "add", "webhook:https://example.com/hook"],
    ["notify", "list"],
    ["notify", "remove", "r1"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: " ".join(command[:2]))
def test_an_admin_command_refuses_a_sqlite_file_that_does_not_exist(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mistyped = tmp_path / "clarion.dbb"
    code, out, err = run_cli(capsys, *command, "--database-url", f"sqlite:///{mistyped}")
    assert code == 1
    assert out == ""
    assert err == (
        f"clarion: error: database file {mistyped} does not exist (check --database-url or "
        "CLARION_DATABASE_URL; `clarion db upgrade` creates a new one)\n"
    )
    assert list(tmp_path.iterdir()) == []  # nothing created: no database, no -wal, no lock


def test_the_environment_variable_is_checked_like_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLARION_DATABASE_URL", "sqlite:///./typo.db")
    code, _, err = run_cli(capsys, "audit", "export")
    assert code == 1
    assert err.startswith(f"clarion: error: database file {tmp_path / 'typo.db'} does not exist")
    assert not (tmp_path / "typo.db").exists()


def test_db_upgrade_creates_the_file_and_the_commands_then_use_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    assert run_cli(capsys, "db", "upgrade", "--database-url", url)[0] == 0
    code, out, _ = run_cli(capsys, "audit", "export", "--database-url", url)
    assert (code, out) == (0, "")


@pytest.mark.postgres
@pytest.mark.parametrize(
    "command", [["audit", "export"], ["users", "create", "ada"], ["db", "upgrade"]]
)
def test_a_postgresql_database_that_does_not_exist_is_one_line_naming_it(
    command: list[str], postgres_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = make_url(postgres_database_url).set(database="clarion_no_such_database_29")
    url = missing.render_as_string(hide_password=False)
    code, out, err = run_cli(capsys, *command, "--database-url", url)
    assert (code, out) == (1, "")
    assert err.startswith("clarion: error: database 'clarion_no_such_database_29' does not exist")
    assert err.count("\n") == 1
