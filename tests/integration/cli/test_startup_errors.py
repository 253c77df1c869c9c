"""#30: every start-up mistake of ``clarion serve`` is one ``clarion: error:`` line naming the
setting and the value, and a non-zero exit — found before anything is created or migrated,
before the banner, and with no log line ahead of it. The database commands share the check.

Each case runs ``clarion serve`` as a real process (bounded by a timeout) without any
``CLARION_*`` variable of the test run's own environment.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from sqlalchemy.engine import make_url

from tests.integration.cli.support import run_cli
from tests.sockets import LOOPBACK, free_port

TIMEOUT_S = 60
DB_SETTING = "(check --database-url or CLARION_DATABASE_URL"


def _environment(**variables: str) -> dict[str, str]:
    clean = {name: value for name, value in os.environ.items() if not name.startswith("CLARION_")}
    return {**clean, **variables}


def _serve(*argv: str, cwd: Path, **variables: str) -> tuple[int, str, str]:
    """``clarion serve <argv>`` in ``cwd``: its exit code, stdout and stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "clarion", "serve", *argv],
        cwd=cwd,
        env=_environment(**variables),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def _one_error_line(err: str) -> str:
    """The single ``clarion: error:`` line ``err`` must consist of, without its prefix."""
    assert err.count("\n") == 1, err
    assert err.endswith("\n"), err
    assert err.startswith("clarion: error: "), err
    return err.removeprefix("clarion: error: ").rstrip("\n")


@pytest.fixture(name="busy_port")
def fixture_busy_port() -> Iterator[int]:
    """A loopback port another process (this test) is listening on."""
    with socket.socket() as holder:
        holder.bind((LOOPBACK, 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_a_port_in_use_is_one_line_before_any_database_is_created(
    busy_port: int, tmp_path: Path
) -> None:
    code, out, err = _serve(
        "--port", str(busy_port), "--database-url", "sqlite:///./clarion.db", cwd=tmp_path
    )
    assert code == 1
    assert out == ""
    assert _one_error_line(err) == (
        f"port {busy_port} on 127.0.0.1 is already in use by another process (check --port "
        "or CLARION_PORT; stop that process or choose another port)"
    )
    assert list(tmp_path.iterdir()) == []  # no database, no -wal, no lock file


@pytest.mark.parametrize(
    ("argv", "variables", "expected"),
    [
        (["--port", "99999"], {}, "--port must be a port number (0-65535), got '99999'"),
        (
            [],
            {"CLARION_PORT": "99999"},
            "CLARION_PORT must be a port number (0-65535), got '99999'",
        ),
        (["--port", "http"], {}, "--port must be a port number (0-65535), got 'http'"),
        (
            ["--host", "no-such-host.invalid"],
            {},
            "cannot listen on host 'no-such-host.invalid': ",
        ),
        (
            [],
            {"CLARION_ASK_TIMEOUT_S": "soon"},
            "CLARION_ASK_TIMEOUT_S must be a positive number of seconds, got 'soon'",
        ),
        (
            [],
            {"CLARION_LOG_FORMAT": "xml"},
            "CLARION_LOG_FORMAT must be 'json' or 'console', got 'xml'",
        ),
        (
            [],
            {"CLARION_ANSWER_LINK_KEYS": "not-base64!"},
            "CLARION_ANSWER_LINK_KEYS: key 1 must be base64 of at least 32 bytes",
        ),
        (
            [],
            {"CLARION_ELICITATION_KEYS": "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE="},
            "CLARION_ELICITATION_KEYS: key 1 is ",
        ),
    ],
    ids=[
        "port flag",
        "port variable",
        "port not a number",
        "host",
        "malformed setting",
        "log format",
        "unreadable key ring",
        "weak key ring",
    ],
)
def test_a_bad_setting_is_one_line_naming_it_and_nothing_is_created(
    argv: list[str], variables: dict[str, str], expected: str, tmp_path: Path
) -> None:
    code, out, err = _serve(
        *argv, "--database-url", "sqlite:///./clarion.db", cwd=tmp_path, **variables
    )
    assert (code, out) == (1, "")
    assert _one_error_line(err).startswith(expected)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "sqlite:///./no-such-folder/clarion.db",
            "cannot create database file {tmp}/no-such-folder/clarion.db: the folder "
            "{tmp}/no-such-folder does not exist {setting}; create the folder first)",
        ),
        (
            "sqlite:///.",
            "database file {tmp} is a folder {setting})",
        ),
        (
            "mysql://ada:s3cret@db.example/clarion",
            "database URL 'mysql://ada:***@db.example/clarion' names an unsupported database "
            "'mysql' {setting}; use sqlite:///path/to/clarion.db or postgresql://user@host:5432/name)",
        ),
        (
            "postgresql://ada:s3cret@db.example:port/clarion",
            "'postgresql://ada:***@db.example:port/clarion' is not a valid database URL "
            "{setting}; use sqlite:///path/to/clarion.db or postgresql://user@host:5432/name)",
        ),
        (
            "sqlite://",
            "database URL 'sqlite://' names an in-memory SQLite database; Clarion needs a file "
            "{setting}; use sqlite:///path/to/clarion.db or postgresql://user@host:5432/name)",
        ),
    ],
    ids=["missing folder", "a folder", "unsupported scheme", "malformed", "in-memory SQLite"],
)
def test_a_database_mistake_is_one_line_naming_the_database_and_the_setting(
    url: str, expected: str, tmp_path: Path
) -> None:
    code, out, err = _serve("--port", "0", "--database-url", url, cwd=tmp_path)
    assert (code, out) == (1, "")
    line = _one_error_line(err)
    assert line == expected.format(tmp=tmp_path, setting=DB_SETTING)
    assert "s3cret" not in err
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_postgresql_server_is_named_without_its_password(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    url = f"postgresql://ada:s3cret@127.0.0.1:{port}/clarion"
    code, out, err = _serve("--port", "0", "--database-url", url, cwd=tmp_path)
    assert (code, out) == (1, "")
    line = _one_error_line(err)
    assert line.startswith(
        f"cannot connect to PostgreSQL database 'clarion' at 127.0.0.1:{port} as 'ada' "
        f"{DB_SETTING}): "
    )
    assert "Connection refused" in line
    assert "s3cret" not in err
    assert "Background on this error" not in err


@pytest.mark.postgres
def test_a_missing_postgresql_database_is_one_line_before_the_banner(
    postgres_database_url: str, tmp_path: Path
) -> None:
    missing = make_url(postgres_database_url).set(database="clarion_no_such_database_30")
    url = missing.render_as_string(hide_password=False)
    code, out, err = _serve("--port", "0", "--database-url", url, cwd=tmp_path)
    assert (code, out) == (1, "")
    assert _one_error_line(err).startswith(
        "database 'clarion_no_such_database_30' does not exist on the PostgreSQL server at "
    )


@pytest.mark.parametrize(
    "command", [["db", "upgrade"], ["users", "create", "ada"], ["audit", "export"]]
)
def test_the_database_commands_give_the_same_line(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "mysql://ada:s3cret@db.example/clarion"
    code, out, err = run_cli(capsys, *command, "--database-url", url)
    assert (code, out) == (1, "")
    assert _one_error_line(err) == (
        "database URL 'mysql://ada:***@db.example/clarion' names an unsupported database "
        f"'mysql' {DB_SETTING}; use sqlite:///path/to/clarion.db or postgresql://user@host:5432/name)"
    )


def test_db_upgrade_names_a_missing_folder_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "missing" / "clarion.db"
    code, _, err = run_cli(capsys, "db", "upgrade", "--database-url", f"sqlite:///{database}")
    assert code == 1
    assert _one_error_line(err).startswith(f"cannot create database file {database}: the folder")
    assert list(tmp_path.iterdir()) == []


def test_port_zero_serves_on_a_free_port_the_banner_names_and_notes_follow_it(
    tmp_path: Path,
) -> None:
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "clarion",
            "serve",
            "--port",
            "0",
            "--database-url",
            "sqlite:///./clarion.db",
            "--log-format",
            "json",
        ],
        cwd=tmp_path,
        env=_environment(),
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stderr is not None
    lines: list[str] = []
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not any("Uvicorn running on" in line for line in lines):
            assert time.monotonic() < deadline, lines
            assert server.poll() is None, lines
            lines.append(server.stderr.readline())
        banner = next(line for line in lines if line.startswith("Clarion on http://127.0.0.1:"))
        port = int(banner.removeprefix("Clarion on http://127.0.0.1:").partition("/")[0])
        assert port > 0
        assert httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
        # The running server's log is as it was: uvicorn's line names the address.
        assert any(f"Uvicorn running on http://127.0.0.1:{port} " in line for line in lines)
    finally:
        server.terminate()
        server.communicate(timeout=TIMEOUT_S)
    # The note on the unset key ring comes only once the configuration has proved usable.
    note = next(i for i, line in enumerate(lines) if "answer_links.ephemeral_key" in line)
    assert note > lines.index(banner)
