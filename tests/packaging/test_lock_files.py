"""#29 F22: the hashed lock files agree with pyproject.toml.

The Makefile installs requirements/build.txt (pip and the build backend) first, then `make run`
requirements/run.txt (`make run EXTRAS=1` requirements/extras.txt, #30) and every other target
requirements/test.txt, all with pip's ``--require-hashes``; `make lock` regenerates them (README,
"Dependencies"). These tests read the files alone — no network, no resolver — and fail when
pyproject.toml and the lock files drift apart: every runtime dependency pinned ``==`` with hashes
in run.txt, those and the optional extras' in extras.txt, every runtime, `test` and `lock` extra
one in test.txt, each at a version that satisfies pyproject's bounds; the installer and build
backend pinned in all four (the Makefile builds Clarion without build isolation); and run.txt,
extras.txt and build.txt parts of test.txt, at the same versions.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
BUILD_LOCK = ROOT / "requirements" / "build.txt"
RUN_LOCK = ROOT / "requirements" / "run.txt"
EXTRAS_LOCK = ROOT / "requirements" / "extras.txt"
# The extras `make run EXTRAS=1` adds (the Makefile's `lock` target compiles them into extras.txt).
OPTIONAL_EXTRAS = ("otel", "apprise", "slack")
TEST_LOCK = ROOT / "requirements" / "test.txt"

# The platform both lock files are resolved for (the Makefile's LOCK_PYTHON and LOCK_PLATFORM):
# a dependency whose marker is false here need not be pinned.
_ENVIRONMENT = {
    "implementation_name": "cpython",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_system": "Linux",
    "python_full_version": "3.11.0",
    "python_version": "3.11",
    "sys_platform": "linux",
}
_STALE = "pyproject.toml and the lock files disagree: run `make lock` (README, Dependencies)"
_HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Pin:
    version: Version
    hashes: frozenset[str]


def _pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def _entries(text: str) -> list[str]:
    """The logical lines of a requirements file: continuations joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    lines = (line.split(" #", 1)[0].strip() for line in joined.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def parse_lock(text: str) -> dict[NormalizedName, Pin]:
    """Every entry of a lock file; an entry that is not ``name==version`` with sha256 hashes (an
    option, a range, a URL, a missing hash or a duplicate) fails, naming it."""
    pins: dict[NormalizedName, Pin] = {}
    for entry in _entries(text):
        requirement_text, _, hash_text = entry.partition("--hash=")
        hash_text = "--hash=" + hash_text if hash_text else ""
        try:
            requirement = Requirement(requirement_text.strip())
        except InvalidRequirement as error:
            pytest.fail(f"not a pinned requirement: {entry!r} ({error})")
        specifiers = list(requirement.specifier)
        assert len(specifiers) == 1, f"not pinned to one version: {entry!r}"
        assert specifiers[0].operator == "==", f"not pinned with ==: {entry!r}"
        assert requirement.url is None, f"a URL, not a release: {entry!r}"
        hashes = _HASH.findall(hash_text)
        assert hashes, f"no sha256 hash: {entry!r}"
        assert hashes == hash_text.split(), f"more than hashes after it: {entry!r}"
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"pinned twice: {requirement.name}"
        pins[name] = Pin(Version(specifiers[0].version), frozenset(hashes))
    return pins


def _lock(path: Path) -> dict[NormalizedName, Pin]:
    return parse_lock(path.read_text(encoding="utf-8"))


def _applies(requirement: Requirement, extra: str = "") -> bool:
    return requirement.marker is None or requirement.marker.evaluate(
        {**_ENVIRONMENT, "extra": extra}
    )


def _extra_requirements(name: str, pin: Pin, extra: str) -> list[Requirement]:
    """What the pinned release's ``[extra]`` adds, from the installed release's metadata; none
    when this virtual environment has another version (not installed from the lock)."""
    try:
        installed = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return []
    if Version(installed.version) != pin.version:
        return []
    requirements = (Requirement(text) for text in installed.requires or [])
    return [
        requirement
        for requirement in requirements
        if requirement.marker is not None
        and _applies(requirement, extra)
        and not _applies(requirement)
    ]


def unsatisfied(
    requirements: list[str], pins: dict[NormalizedName, Pin], extra: str = ""
) -> list[str]:
    """Each of pyproject's requirements (for the lock's platform; `extra` names the extra they
    belong to) that the pins leave out or pin at a version outside its bounds, with what the lock
    has instead; a requirement ``name[extra]`` needs what that extra adds pinned too."""
    problems: list[str] = []
    for text in requirements:
        requirement = Requirement(text)
        if not _applies(requirement, extra):
            continue
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None:
            problems.append(f"{text}: not pinned")
            continue
        if not requirement.specifier.contains(pin.version, prereleases=True):
            problems.append(f"{text}: pinned at {pin.version}")
        for name in sorted(requirement.extras):
            needed = [str(r) for r in _extra_requirements(requirement.name, pin, name)]
            problems += [f"{text}: {problem}" for problem in unsatisfied(needed, pins, name)]
    return problems


def _build_requirements() -> list[str]:
    # pip is upgraded from the lock too (the Makefile no longer runs an unpinned upgrade).
    return ["pip", *_pyproject()["build-system"]["requires"]]


@pytest.mark.parametrize(
    "path", [BUILD_LOCK, RUN_LOCK, EXTRAS_LOCK, TEST_LOCK], ids=lambda path: path.name
)
def test_every_entry_is_pinned_with_hashes(path: Path) -> None:
    """#29 F22: each lock file pins exact releases by hash, as pip's --require-hashes needs."""
    assert _lock(path)


def test_the_build_lock_pins_the_installer_and_the_build_backend() -> None:
    """#29 F22: the first install of every target, build.txt, pins pip and pyproject's
    build-system requirements at versions inside their bounds."""
    assert unsatisfied(_build_requirements(), _lock(BUILD_LOCK)) == [], _STALE


def test_the_run_lock_pins_every_runtime_dependency() -> None:
    """#29 F22: `make run` gets every runtime dependency (and the build tools) at a version inside
    pyproject's bounds, from run.txt alone."""
    project = _pyproject()["project"]
    wanted = [*project["dependencies"], *_build_requirements()]
    assert unsatisfied(wanted, _lock(RUN_LOCK)) == [], _STALE


def test_the_extras_lock_pins_the_runtime_dependencies_and_the_optional_extras() -> None:
    """#30: `make run EXTRAS=1` gets the runtime dependencies and those of the otel, apprise and
    slack extras (and the build tools) from extras.txt alone, and nothing of the test
    toolchain."""
    project = _pyproject()["project"]
    extras = project["optional-dependencies"]
    optional = [requirement for name in OPTIONAL_EXTRAS for requirement in extras[name]]
    wanted = [*project["dependencies"], *optional, *_build_requirements()]
    pins = _lock(EXTRAS_LOCK)
    assert unsatisfied(wanted, pins) == [], _STALE
    assert {"pytest", "playwright", "mypy"}.isdisjoint(pins)


def test_the_test_lock_pins_the_runtime_test_and_lock_dependencies() -> None:
    """#29 F22: `make test` and `make lock` get every runtime, `test` and `lock` dependency (and
    the build tools) at a version inside pyproject's bounds, from test.txt alone."""
    project = _pyproject()["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *extras["test"], *extras["lock"], *_build_requirements()]
    assert unsatisfied(wanted, _lock(TEST_LOCK)) == [], _STALE


@pytest.mark.parametrize("path", [BUILD_LOCK, RUN_LOCK, EXTRAS_LOCK], ids=lambda path: path.name)
def test_the_other_locks_are_parts_of_the_test_lock(path: Path) -> None:
    """#29 F22: build.txt, run.txt and extras.txt pin nothing that test.txt does not, at the same
    version and hashes, so `make test` after `make run` (or the reverse) never changes a
    dependency."""
    part, test = _lock(path), _lock(TEST_LOCK)
    assert {name: pin for name, pin in part.items() if test.get(name) != pin} == {}, _STALE


def test_the_checks_catch_drift() -> None:
    """#29 F22: a bound raised past the pin, a dependency added without a pin, a pin without a
    hash or with a range, and a missing requirement of an extra are each reported."""
    lock = "starlette==1.10.0 \\\n    --hash=sha256:" + "a" * 64 + "\n    # via clarion\n"
    pins = parse_lock(lock)
    assert unsatisfied(["starlette>=1.10"], pins) == []
    assert unsatisfied(["starlette>=1.11"], pins) == ["starlette>=1.11: pinned at 1.10.0"]
    assert unsatisfied(["zstandard>=0.1"], pins) == ["zstandard>=0.1: not pinned"]
    assert unsatisfied(["zstandard>=0.1; python_version < '3.10'"], pins) == []
    for bad in ("starlette==1.10.0\n", "starlette>=1.10 --hash=sha256:" + "a" * 64 + "\n"):
        with pytest.raises(AssertionError):
            parse_lock(bad)
    # What an extra adds comes from the pinned release's metadata, installed from test.txt here:
    # psycopg[binary] needs psycopg-binary.
    locked = TEST_LOCK.read_text(encoding="utf-8")
    without = re.sub(r"^psycopg-binary==.*?(?=^\S)", "", locked, flags=re.DOTALL | re.MULTILINE)
    assert unsatisfied(["psycopg[binary]"], parse_lock(locked)) == []
    problems = unsatisfied(["psycopg[binary]"], parse_lock(without))
    assert len(problems) == 1, problems
    assert "psycopg-binary" in problems[0]
    assert problems[0].endswith("not pinned")
