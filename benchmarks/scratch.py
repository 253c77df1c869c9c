"""The scratch databases every benchmark measures on, written once: a fresh PostgreSQL database
on a given server (created before the run and dropped after it, whatever happened) and a SQLite
file in a temporary folder."""

from __future__ import annotations

import argparse
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import psycopg
from sqlalchemy.engine import Engine, make_url

from clarion.adapters.postgres_notify import libpq_conninfo
from clarion.adapters.sql import create_engine


@contextmanager
def scratch_postgres(server_url: str) -> Iterator[str]:
    """The URL of a new, empty database on the server of ``server_url`` (any database there
    that the user may connect to), dropped afterwards."""
    name = f"clarion_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(libpq_conninfo(server_url), autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(libpq_conninfo(server_url), autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def postgres_engine(server_url: str) -> Iterator[Engine]:
    """An engine on a :func:`scratch_postgres` database (not migrated)."""
    with scratch_postgres(server_url) as url:
        engine = create_engine(url)
        try:
            yield engine
        finally:
            engine.dispose()


@contextmanager
def scratch_sqlite() -> Iterator[str]:
    """The URL of a SQLite file in a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory() as folder:
        yield f"sqlite:///{Path(folder) / 'bench.db'}"


@contextmanager
def sqlite_engine(directory: Path | None = None, synchronous: str = "FULL") -> Iterator[Engine]:
    """An engine on a SQLite file in ``directory`` (a temporary folder when None) committing
    with ``synchronous`` (``FULL`` or ``NORMAL``; not migrated)."""
    if directory is None:
        with tempfile.TemporaryDirectory() as folder, sqlite_engine(Path(folder), synchronous) as e:
            yield e
        return
    engine = create_engine(
        f"sqlite:///{directory / 'bench.db'}",
        sqlite_synchronous="NORMAL" if synchronous == "NORMAL" else "FULL",
    )
    try:
        yield engine
    finally:
        engine.dispose()


EngineMaker = Callable[[], AbstractContextManager[Engine]]


def add_backend_flags(parser: argparse.ArgumentParser) -> None:
    """``--backends`` (default both) and ``--postgres-url`` (default
    ``CLARION_TEST_POSTGRES_URL``), as :func:`chosen_backends` reads them."""
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--postgres-url", default=os.environ.get("CLARION_TEST_POSTGRES_URL", ""))


def chosen_backends(args: argparse.Namespace) -> Iterator[tuple[str, EngineMaker]]:
    """The backends ``--backends`` names, each with a maker of a fresh engine (a SQLite file,
    or a scratch PostgreSQL database); PostgreSQL without a URL is printed as skipped."""
    makers: dict[str, EngineMaker] = {"sqlite": sqlite_engine}
    if args.postgres_url:
        makers["postgresql"] = lambda: postgres_engine(args.postgres_url)
    for name in [b.strip() for b in args.backends.split(",") if b.strip()]:
        if name not in makers:
            print(f"{name}: skipped (no URL)")
            continue
        yield name, makers[name]
