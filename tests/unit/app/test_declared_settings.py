"""Issue #32: each setting is declared once, on its ``Settings`` field, and the variable
reading, the ``clarion serve`` flags (and ``--database-url`` of every command that opens the
database) and their ``--help`` lines come from that one declaration."""

from __future__ import annotations

import argparse

import attrs
import pytest

from clarion.app.root.cli import build_parser
from clarion.app.root.cli.common import setting_flags, settings_of
from clarion.app.root.cli.reference import commands
from clarion.app.root.declared_settings import (
    Setting,
    declared_settings,
    read_environment,
    setting,
)
from clarion.app.root.settings import Settings, parse_positive_int
from clarion.domain.errors import ValidationError

# Fields an embedding host sets through ``Settings``; ``clarion serve`` fixes them, and the limits
# have their own variables and table (docs/operations.md#limits).
NOT_SETTINGS_OF_SERVE = {"tool_suffix", "resume_timeout_s", "progress_interval_s", "limits"}


def _parser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    return next(command.parser for command in commands(build_parser()) if command.path == path)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {
        action.option_strings[0]
        for action in parser._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction)
    }


def test_every_field_but_the_embedding_ones_is_a_declared_setting() -> None:
    declared = {declared.name for declared in declared_settings(Settings)}
    fields = {field.name for field in attrs.fields(Settings)}
    assert declared == fields - NOT_SETTINGS_OF_SERVE


def test_variables_and_flags_are_unique_and_spelled_the_house_way() -> None:
    settings = [declared.setting for declared in declared_settings(Settings)]
    variables = [setting.env for setting in settings]
    flags = [setting.flag for setting in settings if setting.flag]
    assert len(set(variables)) == len(variables)
    assert len(set(flags)) == len(flags)
    assert all(flag.startswith("--") and flag == flag.lower() for flag in flags)


def test_the_serve_flags_are_exactly_the_declared_ones() -> None:
    declared = {d.setting.flag for d in declared_settings(Settings) if d.setting.flag}
    assert _options(_parser(("serve",))) == declared


@pytest.mark.parametrize(
    "path",
    [
        ("db", "upgrade"),
        ("users", "list"),
        ("tokens", "create"),
        ("notify", "add"),
        ("audit", "export"),
    ],
)
def test_commands_that_open_the_database_take_its_declared_flag_and_no_other(
    path: tuple[str, ...],
) -> None:
    options = _options(_parser(path))
    assert "--database-url" in options
    serve_only = {d.setting.flag for d in declared_settings(Settings) if d.setting.flag}
    assert options & serve_only == {"--database-url"}


def test_a_flag_wins_over_its_variable_and_is_parsed_by_the_same_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLARION_ELICITATION_MIN_HUMAN_MS", "400")
    monkeypatch.setenv("CLARION_PORT", "9000")
    args = build_parser().parse_args(["serve", "--elicitation-min-human-ms", "0"])
    settings = settings_of(args)
    assert (settings.elicitation_min_human_ms, settings.port) == (0, 9000)
    bad = build_parser().parse_args(["serve", "--elicitation-min-human-ms", "-1"])
    with pytest.raises(ValidationError) as caught:
        settings_of(bad)
    assert caught.value.field == "--elicitation-min-human-ms"


def test_an_admin_command_reads_the_database_url_flag_over_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLARION_DATABASE_URL", "sqlite:///from-env.db")
    assert settings_of(build_parser().parse_args(["users", "list"])).database_url == (
        "sqlite:///from-env.db"
    )
    args = build_parser().parse_args(["users", "list", "--database-url", "memory://"])
    assert settings_of(args).database_url == "memory://"


def test_a_flag_s_help_names_its_variable_and_the_field_s_default() -> None:
    helps = {
        action.option_strings[0]: action.help
        for action in _parser(("serve",))._actions
        if action.option_strings
    }
    assert (
        helps["--port"] == "bind port, 0-65535; 0 = any free port (env CLARION_PORT; default 8765)"
    )
    assert helps["--auth"] == "authentication (env CLARION_AUTH; default disabled)"
    assert (
        helps["--ask-timeout"] == "seconds an agent waits (env CLARION_ASK_TIMEOUT_S; default 7200)"
    )
    assert helps["--log-format"] == "log format (env CLARION_LOG_FORMAT)"  # computed default


@attrs.frozen
class _Example:
    """A settings class with one more setting than it had: the declaration is all it takes."""

    retries: int = setting(
        3,
        env="CLARION_EXAMPLE_RETRIES",
        parse=parse_positive_int,
        doc="how often to retry",
        flag="--retries",
        help="how often to retry",
    )
    label: str = setting(
        "",
        env="CLARION_EXAMPLE_LABEL",
        parse=lambda value, name: value,
        strip=True,
        doc="a label",
        secret=True,
    )


def test_one_declaration_gives_the_variable_the_flag_and_the_help() -> None:
    assert read_environment(_Example, {"CLARION_EXAMPLE_RETRIES": "5"}) == {"retries": 5}
    with pytest.raises(ValidationError) as caught:
        read_environment(_Example, {"CLARION_EXAMPLE_RETRIES": "0"})
    assert caught.value.field == "CLARION_EXAMPLE_RETRIES"
    # A stripped setting counts a blank variable as unset; a secret stays out of repr.
    assert read_environment(_Example, {"CLARION_EXAMPLE_LABEL": "  "}) == {}
    assert read_environment(_Example, {"CLARION_EXAMPLE_LABEL": " x "}) == {"label": "x"}
    assert "label" not in repr(_Example(label="hidden"))
    (retries, _label) = declared_settings(_Example)
    assert retries.flag_help() == "how often to retry (env CLARION_EXAMPLE_RETRIES; default 3)"
    assert retries.setting.from_flag("7") == 7
    with pytest.raises(ValidationError) as flag_error:
        retries.setting.from_flag("none")
    assert flag_error.value.field == "--retries"


def test_a_declaration_is_refused_with_a_secret_flag_a_foreign_variable_or_no_help() -> None:
    with pytest.raises(ValueError, match="a secret has no flag"):
        Setting(env="CLARION_X", parse=lambda v, n: v, doc="x", flag="--x", secret=True)
    with pytest.raises(ValueError, match="CLARION_"):
        Setting(env="X", parse=lambda v, n: v, doc="x")
    with pytest.raises(ValueError, match="a flag needs its help text"):
        Setting(env="CLARION_X", parse=lambda v, n: v, doc="x", flag="--x")


def test_setting_flags_adds_only_the_named_settings() -> None:
    parser = argparse.ArgumentParser()
    setting_flags(parser, ["port", "host"])
    assert _options(parser) == {"--host", "--port"}
