"""The built wheel: one top-level package, ``clarion``, with its typing marker and data files."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Building the wheel takes longer than the whole quick loop (`make quick` leaves it out).
# One worker builds the wheel once for the module's tests (pytest-xdist --dist loadgroup).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]


# What a build of the working tree must not see (and what it would otherwise leave in it).
_NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", ".*cache", ".hypothesis", ".coverage*"
)


@pytest.fixture(name="wheel", scope="module")
def fixture_wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    # pip builds a local directory in place (build/, *.egg-info), so build a copy of the tree:
    # a test run leaves the working tree as it found it.
    source = tmp_path_factory.mktemp("source") / "clarion"
    shutil.copytree(ROOT, source, symlinks=True, ignore=_NOT_SOURCE)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out),
            str(source),
        ],
        check=True,
        cwd=out,
    )
    (built,) = out.glob("clarion-*.whl")
    return zipfile.ZipFile(built)


def test_the_only_top_level_package_is_clarion(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/", 1)[0] for name in wheel.namelist()}
    packages = {top for top in tops if not top.endswith((".dist-info", ".data"))}
    assert packages == {"clarion"}


def test_the_wheel_ships_the_layers_typing_marker_migrations_and_inbox_assets(
    wheel: zipfile.ZipFile,
) -> None:
    names = set(wheel.namelist())
    for required in (
        "clarion/py.typed",
        "clarion/domain/__init__.py",
        "clarion/ports/testing/__init__.py",
        "clarion/adapters/sql/migrations/env.py",
        "clarion/adapters/sql/migrations/versions/0001_initial.py",
        "clarion/adapters/web/static/index.html",
        "clarion/adapters/mcp/static/question-card.html",
        "clarion/app/root/cli/__init__.py",
        "clarion/__main__.py",
    ):
        assert required in names, required
    assert not any(name.startswith(("clarion/tests", "tests/", "docs/")) for name in names)


def test_the_console_script_is_declared(wheel: zipfile.ZipFile) -> None:
    (entry_points,) = [n for n in wheel.namelist() if n.endswith("entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "clarion = clarion.app.root.cli:main" in text
