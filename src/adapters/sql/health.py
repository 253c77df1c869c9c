"""The health probe: ``SELECT 1`` on a connection of its own, never one of the pool's, so a
pool exhausted by a burst of requests does not make a liveness probe fail."""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.pool import NullPool

PROBE_CONNECT_TIMEOUT_S = 5


def database_probe(engine: Engine) -> tuple[Callable[[], object], Callable[[], None]]:
    """``(check, close)``: ``check()`` opens a fresh connection to ``engine``'s database, runs
    ``SELECT 1`` and closes it (raising when the database is unreachable); ``close()`` releases
    the probe's engine."""
    connect_args: dict[str, object] = (
        {"connect_timeout": PROBE_CONNECT_TIMEOUT_S}
        if engine.dialect.name == "postgresql"
        else {"timeout": PROBE_CONNECT_TIMEOUT_S}
    )
    probe = sa.create_engine(
        engine.url, poolclass=NullPool, hide_parameters=True, connect_args=connect_args
    )

    def check() -> object:
        with probe.connect() as connection:
            return connection.execute(sa.text("SELECT 1")).scalar_one()

    return check, probe.dispose
