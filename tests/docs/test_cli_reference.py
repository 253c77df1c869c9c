"""``docs/cli.md`` is the reference the ``clarion`` parser generates (issue #30), and the
generator covers every command and argument whatever the terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from clarion.app.root.cli import build_parser
from clarion.app.root.cli.reference import commands, main, render_reference

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "cli.md"


def test_docs_cli_md_is_what_the_parser_generates() -> None:
    committed = REFERENCE.read_text(encoding="utf-8")
    assert committed == render_reference(build_parser()), (
        "docs/cli.md is out of date: run `make cli-docs`"
    )


def test_every_command_and_argument_of_the_parser_is_in_the_reference() -> None:
    text = render_reference(build_parser())
    for command in commands(build_parser()):
        assert f"`{command.name}`" in text
        for action in command.parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            name = action.option_strings[0] if action.option_strings else action.dest
            assert f"`{name}" in text, (command.name, name)


def test_a_new_subcommand_changes_the_reference() -> None:
    parser = build_parser()
    before = render_reference(parser)
    subcommands = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    extra = subcommands.add_parser("frobnicate", help="a command the file does not know")
    extra.add_argument("--level", default=3, help="how hard (env CLARION_FROB_LEVEL)")
    after = render_reference(parser)
    assert after != before
    assert (
        "| [`clarion frobnicate`](#clarion-frobnicate) | a command the file does not know |"
        in after
    )
    assert "| `--level LEVEL` | how hard (env CLARION_FROB_LEVEL) | `3` |" in after
    assert "Environment: `CLARION_FROB_LEVEL`." in after


@pytest.mark.parametrize("columns", ["20", "80", "400"])
def test_the_reference_does_not_depend_on_the_terminal_width(
    columns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = render_reference(build_parser())
    monkeypatch.setenv("COLUMNS", columns)
    assert render_reference(build_parser()) == expected


def test_update_writes_the_file_and_a_bad_argument_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "cli.md"
    assert main(["--update", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == render_reference(build_parser())
    assert main(["--frob"]) == 2
    assert "usage: python -m clarion.app.root.cli.reference [--update PATH]" in (
        capsys.readouterr().err
    )
