"""What every ``clarion`` command shares: the one-line error, settings from flags and the
environment, and the flags naming a database or a server."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from clarion.app.root.declared_settings import declared_settings
from clarion.app.root.settings import Settings

DEFAULT_URL = "http://127.0.0.1:8765"

Handler = Callable[[argparse.Namespace], int]
Item = TypeVar("Item")


class CliError(Exception):
    """A failure to report as one line on stderr."""


def setting_flags(parser: argparse.ArgumentParser, names: Iterable[str] | None = None) -> None:
    """Add the flag of each setting named (by its :class:`Settings` field; None: every setting
    that declares one), as its declaration says; :func:`settings_of` merges what was given."""
    wanted = None if names is None else set(names)
    for declared in declared_settings(Settings):
        flag = declared.setting.flag
        if flag is None or (wanted is not None and declared.name not in wanted):
            continue
        argument = parser.add_argument(flag, help=declared.flag_help())
        argument.type = declared.setting.flag_type
        argument.choices = declared.setting.choices or None


def command_group(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, *, help: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """``clarion NAME COMMAND …``: a group of commands, one of which must be named."""
    group = commands.add_parser(name, help=help)
    return group.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")


def database_commands(*commands: tuple[argparse.ArgumentParser, Handler]) -> None:
    """Finish each (command, handler) of a command that opens the database: its
    ``--database`` flag after the command's own arguments, and the handler ``main`` calls."""
    _finish(database_flag, commands)


def server_commands(*commands: tuple[argparse.ArgumentParser, Handler]) -> None:
    """Finish each (command, handler) of a command that talks to a server: its
    :func:`server_flags` after the command's own arguments, and the handler ``main`` calls."""
    _finish(server_flags, commands)


def _finish(
    flags: Callable[[argparse.ArgumentParser], None],
    commands: Iterable[tuple[argparse.ArgumentParser, Handler]],
) -> None:
    for parser, handler in commands:
        flags(parser)
        parser.set_defaults(handler=handler)


def print_listing(
    args: argparse.Namespace,
    items: Sequence[Item],
    *,
    json_body: Any,
    empty: str,
    print_item: Callable[[Item], None],
) -> int:
    """Print what a list command found: ``json_body`` as JSON with ``--json``; otherwise
    ``empty`` when there are no ``items``, or each item by ``print_item``."""
    if args.json:
        print(json.dumps(json_body, indent=2, ensure_ascii=False))
        return 0
    if not items:
        print(empty)
    for item in items:
        print_item(item)
    return 0


def database_flag(parser: argparse.ArgumentParser) -> None:
    setting_flags(parser, ["database_url"])


def server_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", help=f"Clarion server URL (env CLARION_URL; default {DEFAULT_URL})"
    )
    token = parser.add_mutually_exclusive_group()
    token.add_argument(
        "--token",
        help="personal access token; visible to other local users (ps), so prefer "
        "CLARION_TOKEN or --ask-token",
    )
    token.add_argument(
        "--ask-token",
        action="store_true",
        help="prompt for the personal access token without echoing it (needs a terminal)",
    )


def settings_of(args: argparse.Namespace) -> Settings:
    """The settings: each setting's flag, if the command took it and it was given (parsed by
    the setting's own parser and named as ``--flag`` in an error), else its variable, else its
    default.

    Raises:
        ValidationError: a flag or variable has a value that cannot be used; ``field`` names
            it.
    """
    flags: dict[str, object] = {}
    for declared in declared_settings(Settings):
        dest = declared.setting.dest
        if dest is not None:
            flags[declared.name] = declared.setting.from_flag(getattr(args, dest, None))
    return Settings.from_env(**flags)


def usable_database(settings: Settings, *, create: bool = False) -> Settings:
    """``settings``, once the database they name is known to be usable — the one check every
    command makes before it opens a database, so that each mistake is one line naming the
    database and the setting, before anything is created (#29, #30). ``create``: the commands
    that create a database (``clarion serve``, ``clarion db upgrade``) may be given a SQLite
    file that does not exist yet, in a folder that does; a PostgreSQL database is never
    created.

    Raises:
        DatabaseMissing: the URL is malformed or unsupported, or the database does not exist
            or cannot be reached.
    """
    from clarion.adapters.sql.presence import require_database
    from clarion.app.root.storage import MEMORY_URL

    if settings.database_url != MEMORY_URL:
        require_database(settings.database_url, create_sqlite=create)
    return settings


def existing_database(args: argparse.Namespace) -> Settings:
    """The settings of an administrative command, whose database must already exist: a
    mistyped SQLite path or PostgreSQL database is one error naming it, never a new empty
    database (#29; only ``clarion db upgrade`` and ``clarion serve`` create one).

    Raises:
        DatabaseMissing: the database does not exist or cannot be reached.
    """
    return usable_database(settings_of(args))
