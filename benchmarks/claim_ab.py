"""The claim against a bare conditional UPDATE, for comparing two versions of Clarion.

Runs ``bench_claims`` of the ``benchmarks.sql_bench`` module found on the import path, with
the ``clarion`` package found there, on a fresh SQLite file and (with
``CLARION_TEST_POSTGRES_URL``) a scratch PostgreSQL database, and prints the claims per
second, the bare updates per second and their ratio. It imports nothing else of either, so it
also drives versions older than today's benchmark file — each with its own ``bench_claims``,
the same alternating measurement since issue 15 was filed. For an earlier commit, make a
worktree whose ``clarion`` package is importable by path:

    git worktree add /tmp/before 65aed2f
    mkdir /tmp/before/.imp && ln -s ../src /tmp/before/.imp/clarion
    PYTHONPATH=/tmp/before/.imp:/tmp/before .venv/bin/python benchmarks/claim_ab.py before
    PYTHONPATH=.typing:. .venv/bin/python benchmarks/claim_ab.py now

``--sqlite-synchronous normal`` (the default here, what every version before issue 16 used)
or ``full`` (the default since); a version whose engine has no such setting gets it as a
pragma on every connection.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import os
import tempfile
import uuid
from typing import Any

import psycopg
import structlog
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url

from benchmarks import sql_bench
from clarion.adapters.sql import create_engine, upgrade_database

CLAIMS = 1000


def _sqlite_engine(path: str, synchronous: str) -> Engine:
    if "sqlite_synchronous" in inspect.signature(create_engine).parameters:
        options: dict[str, Any] = {"sqlite_synchronous": synchronous}
        return create_engine(f"sqlite:///{path}", **options)
    engine = create_engine(f"sqlite:///{path}")

    @event.listens_for(engine, "connect")
    def _synchronous(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute(f"PRAGMA synchronous = {synchronous}")

    return engine


def _report(label: str, database: str, engine: Engine) -> None:
    upgrade_database(engine)
    claims, bare = sql_bench.bench_claims(engine, CLAIMS)
    print(
        f"{label} {database}: claim {claims:,.0f}/s, bare conditional UPDATE+commit"
        f" {bare:,.0f}/s, ratio {claims / bare:.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label", help="names the version in the output")
    parser.add_argument("--sqlite-synchronous", choices=["normal", "full"], default="normal")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    synchronous = args.sqlite_synchronous.upper()
    if "sqlite" in args.backends:
        with tempfile.TemporaryDirectory() as directory:
            engine = _sqlite_engine(f"{directory}/claims.db", synchronous)
            _report(args.label, f"sqlite/{args.sqlite_synchronous}", engine)
            engine.dispose()
    server = os.environ.get("CLARION_TEST_POSTGRES_URL", "")
    if "postgresql" not in args.backends or not server:
        return
    url = make_url(server)
    name = f"clarion_ab_{uuid.uuid4().hex[:12]}"
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        engine = create_engine(url.set(database=name))
        _report(args.label, "postgresql", engine)
        engine.dispose()
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
