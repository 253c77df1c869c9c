"""The ``clarion`` command: serve, migrate, manage users and tokens, answer from a shell, demo.

Every failure prints one clear line to stderr and exits non-zero. Commands that talk to a
server take the token from ``--token``, a hidden prompt (``--ask-token``) or ``CLARION_TOKEN``;
``--token`` is visible to other local users in ``ps``. Each command's module adds its parsers and
names its handler with ``set_defaults(handler=...)``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence

import attrs

from clarion.app.root.cli import admin, approvals, audit, notify, questions, serve
from clarion.app.root.cli.common import CliError
from clarion.app.root.client import ClientError
from clarion.app.root.declared_settings import setting_of
from clarion.app.root.logging_setup import configure_logging
from clarion.app.root.settings import LogFormat, Settings, parse_log_format
from clarion.domain.errors import ClarionError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clarion",
        description="Agents ask people structured questions; anyone allowed answers exactly once.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve.add_commands(commands)
    admin.add_commands(commands)
    notify.add_commands(commands)
    questions.add_commands(commands)
    approvals.add_commands(commands)
    audit.add_commands(commands)
    demo = commands.add_parser(
        "demo", help="run the whole story in one process on a temporary database"
    )
    demo.set_defaults(handler=_demo)
    return parser


def _demo(args: argparse.Namespace) -> int:
    from clarion.app.root.demo import run_demo

    return run_demo()


def _default_log_format() -> LogFormat:
    """The other commands' log format: the serve setting's variable when it is valid (never an
    error here), else console on a terminal."""
    variable = setting_of(attrs.fields(Settings).log_format).env
    value = os.environ.get(variable, "")
    if value in ("json", "console"):
        return parse_log_format(value, variable)
    return "console" if sys.stderr.isatty() else "json"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``clarion`` console script (and ``python -m clarion``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    if args.command not in ("serve", "demo"):
        # Output is the command's answer; log lines (warnings only) go to stderr.
        configure_logging(_default_log_format(), level=logging.WARNING)
    try:
        return handler(args)
    except (CliError, ClientError, ClarionError) as exc:
        print(f"clarion: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the top-level handler: one line, non-zero exit
        print(f"clarion: error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    """The exception's text on one line (a database driver's spans several, and SQLAlchemy
    adds a line pointing at its documentation)."""
    lines = (line.strip() for line in str(exc).splitlines())
    return " ".join(line for line in lines if line and not line.startswith("(Background on"))


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    raise SystemExit(main())
