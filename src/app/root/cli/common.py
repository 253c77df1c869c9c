"""What every ``clarion`` command shares: the one-line error, settings from flags and the
environment, and the flags naming a database or a server."""

from __future__ import annotations

import argparse

from clarion.app.root.settings import DEFAULT_DATABASE_URL, Settings

DEFAULT_URL = "http://127.0.0.1:8765"


class CliError(Exception):
    """A failure to report as one line on stderr."""


def database_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        help=f"database URL (env CLARION_DATABASE_URL; default {DEFAULT_DATABASE_URL})",
    )


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


def settings_of(args: argparse.Namespace, **flags: object) -> Settings:
    return Settings.from_env(database_url=getattr(args, "database_url", None), **flags)


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
