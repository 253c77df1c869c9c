"""Issue #33's quorum race over REST, as figures: concurrent votes (M of N, vetoes, repeats,
``/decision`` and ``respond`` mixed) on a SQLite and a PostgreSQL server, each trial judged by
:func:`tests.integration.rest.approval_race.judge`. Prints ``trials= anomalies=`` per database
(anomalies must be 0)::

    .venv/bin/python -m benchmarks.approval_race                       # SQLite, 50 trials
    .venv/bin/python -m benchmarks.approval_race --trials 200 \\
        --postgres postgresql+psycopg://postgres@127.0.0.1:5432/test   # and PostgreSQL

``--postgres`` names a server (any database there the user may connect to): the race runs on
a new database made there, migrated first and dropped afterwards.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

import anyio
import structlog

from benchmarks.scratch import scratch_postgres
from tests.integration.rest.approval_race import run_trials, served_race


def _run(label: str, database_url: str, trials: int, seed: int) -> int:
    started = time.perf_counter()
    with served_race(database_url) as race:
        anyio.run(run_trials, race, trials, seed)
    seconds = time.perf_counter() - started
    print(f"{label}: trials={race.trials} anomalies={len(race.anomalies)} ({seconds:.1f} s)")
    for anomaly in race.anomalies[:20]:
        print(f"  {anomaly}")
    return len(race.anomalies)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--postgres", default="", help="a PostgreSQL URL to race on as well")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    anomalies = 0
    with tempfile.TemporaryDirectory() as folder:
        sqlite = f"sqlite:///{Path(folder) / 'race.db'}"
        anomalies += _run("sqlite", sqlite, args.trials, args.seed)
    if args.postgres:
        with scratch_postgres(args.postgres) as database_url:
            anomalies += _run("postgresql", database_url, args.trials, args.seed)
    return 1 if anomalies else 0


if __name__ == "__main__":
    raise SystemExit(main())
