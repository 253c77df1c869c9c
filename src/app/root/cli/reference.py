"""``docs/cli.md``, generated from the parser :func:`~clarion.app.root.cli.main.build_parser`
builds (issue #30).

Run ``make cli-docs`` (``python -m clarion.app.root.cli.reference --update docs/cli.md``) after
changing a command, an argument or a help text; without arguments the reference goes to
standard output. ``tests/docs/test_cli_reference.py`` fails while the committed file differs
from :func:`render_reference`'s output.

The output never depends on the terminal: usage lines are wrapped at :data:`WIDTH` columns
whatever ``COLUMNS`` says, and the argument tables are written from the parser's actions, not
from argparse's help layout.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator, Sequence

import attrs

from clarion.app.root.generated_docs import generated_docs_main

WIDTH = 100  # columns of a usage line, fixed so the file is the same on every terminal
GENERATED_BY = "python -m clarion.app.root.cli.reference --update docs/cli.md"
_VARIABLE = re.compile(r"\bCLARION_[A-Z0-9_]*[A-Z0-9]\b")


@attrs.frozen
class Command:
    """One parser of the tree: its words after ``clarion`` and the one-line help its parent
    gave it."""

    path: tuple[str, ...]
    parser: argparse.ArgumentParser
    summary: str

    @property
    def name(self) -> str:
        return " ".join(("clarion", *self.path))

    @property
    def anchor(self) -> str:
        """GitHub's anchor for the section heading (`` `clarion tokens create` ``)."""
        return re.sub(r"[^\w\- ]", "", self.name.lower()).replace(" ", "-")


def _subcommands(
    parser: argparse.ArgumentParser,
) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def commands(parser: argparse.ArgumentParser) -> Iterator[Command]:
    """Every parser of the tree, depth first, in the order the commands were added."""

    def walk(
        current: argparse.ArgumentParser, path: tuple[str, ...], summary: str
    ) -> Iterator[Command]:
        yield Command(path, current, summary)
        subs = _subcommands(current)
        if subs is None:
            return
        helps = {choice.dest: choice.help or "" for choice in subs._choices_actions}
        for name, child in subs.choices.items():
            yield from walk(child, (*path, name), helps.get(name, ""))

    yield from walk(parser, (), "")


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(prog=parser.prog, width=WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%" in text:  # argparse's own expansion: %(default)s, %(choices)s, %(prog)s
        text = text % {**vars(action), "prog": "clarion"}
    return text


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    if action.nargs == 0:
        return ", ".join(f"`{option}`" for option in action.option_strings)
    metavar = action.metavar or (
        "{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper()
    )
    return ", ".join(f"`{option} {metavar}`" for option in action.option_strings)


def _default(action: argparse.Action) -> str:
    if not action.option_strings:
        return "required" if action.required else ""
    if action.required:
        return "required"
    default = action.default
    if default in (None, "", False, [], argparse.SUPPRESS):
        return ""
    return f"`{default}`"


def _notes(action: argparse.Action) -> str:
    notes = []
    if action.choices and action.metavar:  # else the metavar shows them: {json,console}
        notes.append("one of " + ", ".join(f"`{choice}`" for choice in action.choices))
    if isinstance(action, argparse._AppendAction):
        notes.append("repeatable")
    return "; ".join(notes)


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    actions = [
        action
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        and action.help != argparse.SUPPRESS
    ]
    if not actions:
        return []
    rows = ["| argument | meaning | default |", "|---|---|---|"]
    for action in actions:
        meaning = _help(action)
        if notes := _notes(action):
            meaning = f"{meaning} ({notes})" if meaning else notes
        rows.append(f"| {_argument(action)} | {_cell(meaning)} | {_default(action)} |")
    lines = [*rows, ""]
    for group in parser._mutually_exclusive_groups:
        options = [f"`{action.option_strings[0]}`" for action in group._group_actions]
        kind = "exactly one of" if group.required else "at most one of"
        lines += [f"Give {kind} {', '.join(options)}.", ""]
    return lines


def _variables(parser: argparse.ArgumentParser) -> list[str]:
    texts = [parser.description or ""]
    texts += [_help(action) for action in parser._actions if action.help != argparse.SUPPRESS]
    found = sorted(set(_VARIABLE.findall(" ".join(texts))))
    if not found:
        return []
    return ["Environment: " + ", ".join(f"`{name}`" for name in found) + ".", ""]


def _subcommand_table(command: Command, children: Sequence[Command]) -> list[str]:
    rows = ["| command | what it does |", "|---|---|"]
    rows += [
        f"| [`{child.name}`](#{child.anchor}) | {_cell(child.summary)} |" for child in children
    ]
    return [*rows, ""]


def _section(command: Command, children: Sequence[Command]) -> list[str]:
    level = "#" * min(2 + max(len(command.path) - 1, 0), 4)
    lines = [f"{level} `{command.name}`", ""]
    for text in (command.summary, command.parser.description or ""):
        if text:
            lines += [_cell(text[:1].upper() + text[1:]).rstrip(".") + ".", ""]
    lines += ["```text", _usage(command.parser), "```", ""]
    lines += _arguments(command.parser)
    lines += _variables(command.parser)
    if children:
        lines += _subcommand_table(command, children)
    return lines


def render_reference(parser: argparse.ArgumentParser) -> str:
    """The Markdown reference of every command and subcommand of ``parser``, byte-for-byte
    deterministic."""
    tree = list(commands(parser))
    children = {
        command.path: [c for c in tree if c.path[:-1] == command.path and c.path]
        for command in tree
    }
    root = tree[0]
    lines = [
        "# CLI reference",
        "",
        f"<!-- Generated by `{GENERATED_BY}` (`make cli-docs`) from the parser of `clarion`;"
        " do not edit by hand. -->",
        "",
        "Every `clarion` command, subcommand and argument, as the parser in",
        "`src/app/root/cli/` defines them (each command's `--help` prints the same). Commands",
        "that read or write the database directly (`db`, `users`, `tokens`, `notify`, `audit`)",
        "take `--database-url` or `CLARION_DATABASE_URL`; the `questions` commands talk to a",
        "running server (`--url` or `CLARION_URL`) with a personal access token when",
        "authentication is enabled. Settings that only `clarion serve` reads from the",
        "environment are listed in [operations](operations.md#configuration). Every failure",
        "prints one line, `clarion: error: …`, and exits non-zero.",
        "",
    ]
    lines += ["```text", _usage(root.parser), "```", ""]
    lines += _subcommand_table(root, children[()])
    for command in tree[1:]:
        lines += _section(command, children[command.path])
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the reference to standard output, or ``--update PATH`` in place."""
    from clarion.app.root.cli.main import build_parser

    text = render_reference(build_parser())
    return generated_docs_main(
        argv, module="clarion.app.root.cli.reference", show=lambda: text, rewrite=lambda _path: text
    )


if __name__ == "__main__":  # pragma: no cover - run as `make cli-docs`
    raise SystemExit(main())
