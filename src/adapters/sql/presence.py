"""Whether the database a URL names exists, checked before a command that must not create one
(#29: ``clarion audit export`` with a mistyped path used to create and migrate an empty
database, and report nothing).

SQLite: the file must exist (creating it is ``clarion db upgrade``'s and ``clarion serve``'s
job, and then its folder must). PostgreSQL: one connection must open; a database that does not
exist, a server that cannot be reached or refuses the credentials, is one line naming the
database, host and port (never the password, nor the driver's multi-line text). Every command
runs this check before it opens a database (#30: ``clarion serve`` used to fail only after
printing its banner, with the driver's text), so a malformed or unsupported URL is one line
too.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL

from clarion.adapters.sql.engine import normalize_url
from clarion.domain.errors import ClarionError

_SETTING = "check --database-url or CLARION_DATABASE_URL"
_FORMS = "use sqlite:///path/to/clarion.db or postgresql://user@host:5432/name"
_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")
# How long the check waits for a PostgreSQL server that does not answer (libpq's own default
# is to wait for the operating system to give up, minutes later); a URL may set its own.
CONNECT_TIMEOUT_S = 10


class DatabaseMissing(ClarionError):
    """The database a command needs does not exist, cannot be reached, or its URL cannot be
    used."""


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


def _masked(url: str) -> str:
    """A URL as typed, with any password between ``user:`` and ``@`` hidden."""
    return _PASSWORD.sub(r"\1***@", url)


def parse_database_url(url: str | URL) -> URL:
    """``url`` parsed, when it names a database Clarion can use: a SQLite file or PostgreSQL.

    Raises:
        DatabaseMissing: it is not a URL, names another database, or an in-memory SQLite one;
            the message shows it with its password hidden.
    """
    shown = url.render_as_string(hide_password=True) if isinstance(url, URL) else _masked(url)
    try:
        parsed = normalize_url(url)
    except (sa.exc.ArgumentError, ValueError):
        raise DatabaseMissing(
            f"{shown!r} is not a valid database URL ({_SETTING}; {_FORMS})"
        ) from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise DatabaseMissing(
            f"database URL {shown!r} names an unsupported database {backend!r} ({_SETTING}; "
            f"{_FORMS})"
        )
    if backend == "sqlite" and sqlite_file(parsed) is None:
        raise DatabaseMissing(
            f"database URL {shown!r} names an in-memory SQLite database; Clarion needs a file "
            f"({_SETTING}; {_FORMS})"
        )
    return parsed


def require_database(url: str | URL, *, create_sqlite: bool = False) -> None:
    """Refuse a database that cannot be used, creating nothing: the check every command runs
    before it opens a database (``clarion serve`` and ``clarion db upgrade`` with
    ``create_sqlite``, as a SQLite file may be missing for the commands that create it — its
    folder may not).

    Raises:
        DatabaseMissing: the URL is malformed or names another kind of database; the SQLite
            file does not exist (or, with ``create_sqlite``, its folder does not, or cannot be
            written); PostgreSQL refuses the connection (no such database, server unreachable,
            authentication failed). The message names the file, or the database, host and port
            (never the password), and the setting.
    """
    parsed = parse_database_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = sqlite_file(parsed)
        if path is not None:
            _require_sqlite_file(path, create=create_sqlite)
        return
    _require_postgres(parsed)


def _require_sqlite_file(path: Path, *, create: bool) -> None:
    if path.is_dir():
        raise DatabaseMissing(f"database file {path} is a folder ({_SETTING})")
    if path.exists():
        return
    if not create:
        raise DatabaseMissing(
            f"database file {path} does not exist ({_SETTING}; "
            "`clarion db upgrade` creates a new one)"
        )
    folder = path.parent
    if not folder.is_dir():
        raise DatabaseMissing(
            f"cannot create database file {path}: the folder {folder} does not exist "
            f"({_SETTING}; create the folder first)"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DatabaseMissing(
            f"cannot create database file {path}: the folder {folder} is not writable ({_SETTING})"
        )


def _require_postgres(parsed: URL) -> None:
    connect_args = (
        {} if "connect_timeout" in parsed.query else {"connect_timeout": CONNECT_TIMEOUT_S}
    )
    engine = sa.create_engine(
        parsed, hide_parameters=True, poolclass=sa.pool.NullPool, connect_args=connect_args
    )
    name = parsed.database or ""
    where = f"{parsed.host or 'localhost'}:{parsed.port or 5432}"
    try:
        with engine.connect():
            pass
    except sa.exc.SQLAlchemyError as exc:
        reason = _one_line(exc)
        if f'database "{name}" does not exist' in reason:
            raise DatabaseMissing(
                f"database {name!r} does not exist on the PostgreSQL server at {where} "
                f"({_SETTING}; create it with createdb first)"
            ) from None
        user = f" as {parsed.username!r}" if parsed.username else ""
        raise DatabaseMissing(
            f"cannot connect to PostgreSQL database {name!r} at {where}{user} ({_SETTING}): "
            f"{reason.removeprefix('connection failed: ')}"
        ) from None
    finally:
        engine.dispose()


__all__ = ["DatabaseMissing", "parse_database_url", "require_database", "sqlite_file"]
