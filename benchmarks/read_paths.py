"""CPU per call of two reads on hot request paths (issue #35), on a SQLite file:

- ``SqlClaimRepository.reread_bundle`` — every ``tasks/get`` poll of an MCP task, and a late
  answer's one re-read;
- ``SqlHostRepository.get_task_and_workspace`` — every authorization of a task (the answer,
  the list, the event stream's visibility).

Each is called ``--calls`` times in five rounds after a warm-up; the median round's CPU
(``time.process_time``) per call is printed. Figures only::

    .venv/bin/python -m benchmarks.read_paths [--calls 1000]
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
import structlog

from benchmarks.scratch import sqlite_engine
from benchmarks.sql_bench import Loader
from clarion.adapters.sql import SqlClaimRepository, SqlHostRepository, upgrade_database
from clarion.adapters.sql.schema import workspaces
from clarion.adapters.system import SystemClock, UuidIds

ROUNDS = 5


def per_call_ms(action: Callable[[], Any], calls: int) -> float:
    """The median round's CPU milliseconds per call."""
    for _ in range(50):
        action()
    rounds = []
    for _ in range(ROUNDS):
        started = time.process_time()
        for _ in range(calls):
            action()
        rounds.append((time.process_time() - started) / calls)
    return 1000 * sorted(rounds)[ROUNDS // 2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with sqlite_engine() as engine:
        upgrade_database(engine)
        now = datetime.now(UTC)
        with engine.begin() as connection:
            row = {"id": "w1", "name": "w", "owner_id": "u", "created_at": now, "updated_at": now}
            connection.execute(sa.insert(workspaces), [row])
        loader = Loader(engine)
        owners = loader.sessions(7, ["w1"])
        pending_id = loader.bundles(1, owners, answered=False)[0]
        claims = SqlClaimRepository(engine, SystemClock(), UuidIds())
        host = SqlHostRepository(engine, SystemClock(), UuidIds())
        task_id = owners[1][0]
        if claims.reread_bundle(pending_id).bundle is None:
            raise RuntimeError("the bundle was not re-read")
        found = host.get_task_and_workspace(task_id)
        if found is None or found[1] is None:
            raise RuntimeError("the task and its workspace were not read")
        reread = per_call_ms(lambda: claims.reread_bundle(pending_id), args.calls)
        authorize = per_call_ms(lambda: host.get_task_and_workspace(task_id), args.calls)
    print(f"reread_bundle: {reread:.3f} ms of CPU per call")
    print(f"get_task_and_workspace: {authorize:.3f} ms of CPU per call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
