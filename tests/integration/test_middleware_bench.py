"""``benchmarks/middleware_bench.py`` runs whole at a small size (issue #35's CPU per request
outside the store): every kind of request is answered as it should be before anything is timed
(the bench raises otherwise), with authentication disabled and with a personal access token,
and it prints one figure per kind.

It runs as a process of its own, as it is meant to be run: it configures logging as
``clarion serve`` does, and structlog's loggers cached under that configuration (module-level
loggers such as the request log's) would outlive it in a test worker, where later tests
capture log lines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.middleware_bench import KINDS

ROOT = Path(__file__).resolve().parents[2]
_FIGURE = re.compile(r"^\s+(\S+)\s+median\s+([0-9.]+)\s+lowest\s+([0-9.]+)$", re.MULTILINE)


def _bench(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.middleware_bench", *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.server
@pytest.mark.parametrize("auth", [False, True])
def test_every_kind_is_timed(auth: bool) -> None:
    done = _bench("--requests", "3", "--rounds", "2", *(["--auth"] if auth else []))
    assert done.returncode == 0, done.stderr[-2000:]
    assert ("auth enabled" if auth else "auth disabled") in done.stdout
    figures = {
        kind: (float(median), float(low)) for kind, median, low in _FIGURE.findall(done.stdout)
    }
    assert list(figures) == list(KINDS)
    for median, low in figures.values():
        assert 0 < low <= median


@pytest.mark.server
def test_bad_flags_are_named() -> None:
    done = _bench("--rounds", "0")
    assert done.returncode == 2
    assert "--requests and --rounds must be at least 1" in done.stderr
