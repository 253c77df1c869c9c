"""The settings and limits tables of ``docs/operations.md`` are what the settings'
declarations generate (issue #32): a setting or limit added or changed without ``make
settings-docs`` fails here."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from clarion.app.root.declared_settings import declared_settings, setting
from clarion.app.root.settings import Settings, parse_positive_int
from clarion.app.root.settings_docs import (
    END,
    LIMITS_END,
    LIMITS_START,
    START,
    main,
    render_limits_table,
    render_table,
    with_table,
)

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "docs" / "operations.md"


def _committed_section(text: str, start: str = START, end: str = END) -> str:
    return start + text.split(start, 1)[1].split(end, 1)[0] + end


def test_docs_operations_md_holds_the_generated_settings_table() -> None:
    committed = OPERATIONS.read_text(encoding="utf-8")
    assert committed.count(START) == 1, f"docs/operations.md must hold one {START} marker"
    assert _committed_section(committed) == render_table(), (
        "the settings table in docs/operations.md is out of date: run `make settings-docs`"
    )


def test_docs_operations_md_holds_the_generated_limits_table() -> None:
    committed = OPERATIONS.read_text(encoding="utf-8")
    assert committed.count(LIMITS_START) == 1, f"docs/operations.md must hold one {LIMITS_START}"
    assert _committed_section(committed, LIMITS_START, LIMITS_END) == render_limits_table(), (
        "the limits table in docs/operations.md is out of date: run `make settings-docs`"
    )


def test_every_limit_is_one_row_with_its_default_and_refusals() -> None:
    table = render_limits_table()
    for declared in declared_settings(Settings, "limits"):
        (row,) = [line for line in table.splitlines() if f"| `{declared.setting.env}` |" in line]
        assert f"| {declared.shown_default}" in row, declared.name
        assert row.count(" | ") == 4, declared.name  # limit, variable, default, REST, MCP
    assert (
        "| request body, every route (REST, `/mcp`, `/mcp/session/…`, inbox) | "
        "`CLARION_MAX_BODY_BYTES` | 1048576 (1 MiB) | 413 `request body too large" in table
    )


def test_every_setting_is_a_row_naming_its_variable_and_flag() -> None:
    table = render_table()
    for declared in declared_settings(Settings):
        row = next(line for line in table.splitlines() if f"`{declared.setting.env}`" in line)
        flag = declared.setting.flag
        assert (f"| `{flag}` |" if flag else "| none") in row, declared.name


@attrs.frozen
class _Grown:
    retries: int = setting(
        3,
        env="CLARION_EXAMPLE_RETRIES",
        parse=parse_positive_int,
        doc="how often to retry",
        accepts="a positive integer",
        default_doc="(0 never)",
        flag="--retries",
        help="retries",
    )
    token: str = setting(
        "", env="CLARION_EXAMPLE_TOKEN", parse=lambda v, n: v, doc="a token", secret=True
    )


def test_a_new_setting_is_a_new_row() -> None:
    table = render_table(_Grown)
    assert (
        "| how often to retry | `CLARION_EXAMPLE_RETRIES` (a positive integer) | `--retries` | "
        "`3` (0 never) |" in table
    )
    assert (
        "| a token | `CLARION_EXAMPLE_TOKEN` | none (keep secrets out of `ps`) | unset |" in table
    )


def test_update_rewrites_only_the_section_and_refuses_a_file_without_markers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "operations.md"
    target.write_text(
        f"# Before\n\n{START}\nstale\n{END}\n\n{LIMITS_START}\nstale\n{LIMITS_END}\nAfter.\n",
        encoding="utf-8",
    )
    assert main(["--update", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == (
        f"# Before\n\n{render_table()}\n\n{render_limits_table()}\nAfter.\n"
    )
    unmarked = tmp_path / "plain.md"
    unmarked.write_text("# No table\n", encoding="utf-8")
    assert main(["--update", str(unmarked)]) == 1
    assert "must hold one <!-- settings:start -->" in capsys.readouterr().err
    assert unmarked.read_text(encoding="utf-8") == "# No table\n"
    assert main(["--frob"]) == 2
    with pytest.raises(ValueError, match="must hold one"):
        with_table(f"{START}{START}{END}", "x")
