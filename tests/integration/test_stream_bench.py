"""``benchmarks/stream_bench.py`` runs whole at a small size (issue #35's CPU per event-stream
frame): every stream receives every answer's events (a bundle created, a bundle resolved), so
the per-frame figure divides by what was sent, and each figure is printed.

It runs as a process of its own, as it is meant to be run (it starts ``clarion serve``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.server
def test_every_stream_gets_every_frame_and_the_figures_are_printed() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.stream_bench",
            "--streams",
            "3",
            "--answers",
            "10",
            "--rounds",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "2 rounds of 10 answers with 3 streams open" in done.stdout
    assert "frames per answer, all streams: 6.0 (2.00 per stream)" in done.stdout
    for label in ("no stream", "3 streams"):
        figures = re.search(rf"server CPU per answer, {label}: (.*) ms \(median", done.stdout)
        assert figures is not None, done.stdout
        assert len(figures.group(1).split(", ")) == 2
    assert re.search(r"server CPU per frame sent: .* µs \(median -?[0-9.]+\)", done.stdout)
