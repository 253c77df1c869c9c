"""Issue #13: one process per SQLite file (an OS lock, released even by ``kill -9``), database
files readable by their owner only, and ``synchronous=FULL`` unless NORMAL is asked for."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
import sqlalchemy as sa

from clarion.adapters.sql import create_engine, hold_sqlite_file, release_sqlite_file
from clarion.app.root.compose import build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.errors import ValidationError
from tests.integration.crash.serving import serving, start_ready, start_serve
from tests.integration.multiprocess.cluster import ROOT, STARTUP_TIMEOUT_S


def test_a_second_serve_on_the_same_sqlite_file_exits_with_one_line_naming_file_and_holder(
    tmp_path: Path,
) -> None:
    database = tmp_path / "one.db"
    url = f"sqlite:///{database}"
    with serving(url, "first", tmp_path) as first:
        second = start_serve(url, "second", tmp_path)
        assert second.process.wait(STARTUP_TIMEOUT_S) != 0
        second.kill()
        errors = [line for line in second.log().splitlines() if line.startswith("clarion:")]
        assert errors == [
            f"clarion: error: database file {database.resolve()} is in use by process "
            f"{first.process.pid} (lock {database.resolve()}.lock); one Clarion process per "
            "SQLite file — stop it first, or use PostgreSQL for several processes"
        ]
        assert "Traceback" not in second.log()
        # The first one is untouched and still serves.
        assert httpx2.get(f"{first.base_url}/healthz", timeout=10).status_code == 200
        first.kill()  # kill -9: the operating system drops the lock with the process
    with serving(url, "after", tmp_path) as after:
        assert httpx2.get(f"{after.base_url}/healthz", timeout=10).status_code == 200


def test_start_up_refuses_a_file_another_process_holds_and_shares_it_within_one(
    tmp_path: Path,
) -> None:
    database = tmp_path / "held.db"
    settings = Settings(database_url=f"sqlite:///{database}")
    holder = start_ready(settings.database_url, "holder", tmp_path)
    try:
        script = (
            "from clarion.app.root.compose import build_clarion\n"
            "from clarion.app.root.settings import Settings\n"
            f"build_clarion(Settings(database_url={settings.database_url!r})).upgrade()\n"
        )
        refused = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=STARTUP_TIMEOUT_S,
            check=False,
        )
        assert refused.returncode != 0
        assert "DatabaseInUse" in refused.stderr
        assert f"in use by process {holder.process.pid}" in refused.stderr
    finally:
        holder.kill()
    first, second = build_clarion(settings), build_clarion(settings)  # one process: shared
    first.upgrade()
    second.upgrade()
    second.close()
    first.close()


def test_a_hard_link_to_a_served_file_is_refused_like_the_file_itself(tmp_path: Path) -> None:
    """#29: the lock belongs to the file, not its name — a hard link in another folder (a
    second name for the same inode) does not get a second process onto it."""
    database = tmp_path / "one.db"
    (tmp_path / "elsewhere").mkdir()
    alias = tmp_path / "elsewhere" / "alias.db"
    with serving(f"sqlite:///{database}", "first", tmp_path) as first:
        os.link(database, alias)
        second = start_serve(f"sqlite:///{alias}", "second", tmp_path)
        assert second.process.wait(STARTUP_TIMEOUT_S) != 0
        second.kill()
        errors = [line for line in second.log().splitlines() if line.startswith("clarion:")]
        assert len(errors) == 1
        assert errors[0].startswith(f"clarion: error: database file {alias.resolve()} is in use")
        assert "Traceback" not in second.log()
        assert httpx2.get(f"{first.base_url}/healthz", timeout=10).status_code == 200


def test_one_process_holds_a_file_once_whatever_name_it_uses(tmp_path: Path) -> None:
    """#29: within one process two names of one file share a single hold (no self-conflict),
    and the file is free for another process only after the last release."""
    database = tmp_path / "shared.db"
    alias = tmp_path / "alias.db"
    first = hold_sqlite_file(database)
    os.link(database, alias)
    second = hold_sqlite_file(alias)

    def other_process_may_hold(path: Path) -> bool:
        script = (
            "import sys\n"
            "from clarion.adapters.sql import DatabaseInUse, hold_sqlite_file\n"
            "try:\n"
            f"    hold_sqlite_file({str(path)!r})\n"
            "except DatabaseInUse:\n"
            "    sys.exit(3)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, timeout=STARTUP_TIMEOUT_S, check=False
        )
        assert done.returncode in (0, 3)
        return done.returncode == 0

    assert not other_process_may_hold(database)
    release_sqlite_file(first)
    assert not other_process_may_hold(database)  # the alias still holds it
    assert not other_process_may_hold(alias)
    release_sqlite_file(second)
    assert other_process_may_hold(alias)


def test_clarion_users_create_runs_next_to_the_serving_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'admin.db'}"
    with serving(url, "server", tmp_path):
        created = subprocess.run(
            [sys.executable, "-m", "clarion", "users", "create", "alice", "--database-url", url],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=STARTUP_TIMEOUT_S,
            check=False,
        )
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip()


def test_a_new_sqlite_database_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    database = tmp_path / "private.db"
    old_umask = os.umask(0o022)
    try:
        engine = create_engine(f"sqlite:///{database}")
        with engine.begin() as connection:
            connection.execute(sa.text("CREATE TABLE t (x INTEGER)"))
            connection.execute(sa.text("INSERT INTO t VALUES (1)"))
            for suffix in ("", "-wal", "-shm"):
                path = Path(f"{database}{suffix}")
                assert path.exists(), suffix
                assert stat.S_IMODE(path.stat().st_mode) == 0o600, suffix
        engine.dispose()
    finally:
        os.umask(old_umask)


@pytest.mark.parametrize(
    ("environ", "pragma"), [({}, 2), ({"CLARION_SQLITE_SYNCHRONOUS": "normal"}, 1)]
)
def test_sqlite_commits_are_synchronous_full_unless_normal_is_asked_for(
    tmp_path: Path, environ: dict[str, str], pragma: int
) -> None:
    settings = Settings.from_env(environ, database_url=f"sqlite:///{tmp_path / 'sync.db'}")
    clarion = build_clarion(settings)
    assert clarion.engine is not None
    with clarion.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == pragma
    clarion.close()
    with pytest.raises(ValidationError, match="CLARION_SQLITE_SYNCHRONOUS"):
        Settings.from_env({"CLARION_SQLITE_SYNCHRONOUS": "off"})


def test_serve_warns_once_when_the_resume_webhook_is_plain_http_to_another_host(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'warn.db'}"
    env = {"CLARION_RESUME_WEBHOOK": "http://agents.example.com/resume"}
    with serving(url, "warned", tmp_path, env) as server:
        warned = server.log()
    # A loopback receiver must be allowed (issue #29 S4).
    loopback = {
        "CLARION_RESUME_WEBHOOK": "http://127.0.0.1:9/r",
        "CLARION_OUTBOUND_ALLOW": "127.0.0.1",
    }
    with serving(url, "quiet", tmp_path, loopback) as s:
        quiet = s.log()
    assert warned.count("CLARION_RESUME_WEBHOOK is plain http:// to a non-loopback host") == 1
    assert "plain http://" not in quiet
