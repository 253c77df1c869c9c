"""Whether the database a URL names exists, checked before a command that must not create one
(#29: ``clarion audit export`` with a mistyped path used to create and migrate an empty
database, and report nothing).

SQLite: the file must exist (creating it is ``clarion db upgrade``'s and ``clarion serve``'s
job). PostgreSQL: one connection must open; a database that does not exist, or a server that
cannot be reached, is one line naming it (never the driver's multi-line text).
"""

from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL

from clarion.adapters.sql.engine import normalize_url
from clarion.domain.errors import ClarionError

_SETTING = "check --database-url or CLARION_DATABASE_URL"


class DatabaseMissing(ClarionError):
    """The database a command needs does not exist or cannot be reached."""


def sqlite_file(url: URL) -> Path | None:
    """The file a SQLite URL names (a ``file:`` URI's path included); None for an in-memory
    database."""
    database = url.database or ""
    if database.startswith("file:"):
        database = database.removeprefix("file:").partition("?")[0]
    if database in ("", ":memory:") or "mode=memory" in str(url):
        return None
    return Path(os.path.abspath(database))


def _one_line(error: BaseException) -> str:
    text = str(getattr(error, "orig", None) or error)
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def require_database(url: str | URL, *, create_sqlite: bool = False) -> None:
    """Refuse a database that does not exist (``create_sqlite``: a SQLite file may be
    missing, for the commands that create it).

    Raises:
        DatabaseMissing: the SQLite file does not exist, or PostgreSQL refuses the connection
            (no such database, server unreachable); the message names the file or database.
    """
    parsed = normalize_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        path = sqlite_file(parsed)
        if path is not None and not create_sqlite and not path.exists():
            raise DatabaseMissing(
                f"database file {path} does not exist ({_SETTING}; "
                "`clarion db upgrade` creates a new one)"
            )
        return
    if backend != "postgresql":
        return
    engine = sa.create_engine(parsed, hide_parameters=True, poolclass=sa.pool.NullPool)
    shown = parsed.render_as_string(hide_password=True)
    try:
        with engine.connect():
            pass
    except sa.exc.OperationalError as exc:
        reason = _one_line(exc)
        name = parsed.database or ""
        if f'database "{name}" does not exist' in reason:
            raise DatabaseMissing(
                f"database {name!r} does not exist on the PostgreSQL server of {shown} "
                f"({_SETTING}; create it with createdb first)"
            ) from None
        raise DatabaseMissing(f"cannot connect to the database {shown}: {reason}") from None
    finally:
        engine.dispose()


__all__ = ["DatabaseMissing", "require_database", "sqlite_file"]
