"""Running one ``clarion`` command in-process and reading what it printed."""

from __future__ import annotations

import pytest

from clarion.app.root.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``clarion <argv>``; its exit code, standard output and standard error."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
