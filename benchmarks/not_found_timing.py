"""Timing oracle check: does a bundle id that exists but belongs to someone else answer as fast
as an id that never existed? (issue #14: the medians must lie within 0.2 ms.)

With authentication enabled, alice asks one bundle; bob (who may not see it) then calls the
REST routes that take a pending id with alice's id ("foreign") and with a fresh random id
("fabricated"), alternating, and the script prints the median and the 90th percentile of each
kind per route, and the difference of the medians. Every call must be the same 404 both ways.

Run::

    .venv/bin/python -m benchmarks.not_found_timing                 # SQLite, 200 samples each
    .venv/bin/python -m benchmarks.not_found_timing --postgres-url postgresql+psycopg://postgres@127.0.0.1:5432/test

On PostgreSQL a scratch database is created on that server and dropped afterwards.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import structlog
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from clarion.app.compose import build_clarion
from clarion.app.settings import Settings

BASE_URL = "http://127.0.0.1:8765"
TARGET_MS = 0.2
ROUTES: dict[str, Callable[[TestClient, str, dict[str, str]], int]] = {
    "GET /clarification/{id}": lambda c, p, h: (
        c.get(f"/api/v1/clarification/{p}", headers=h).status_code
    ),
    "POST /clarification/{id}/respond": lambda c, p, h: (
        c.post(f"/api/v1/clarification/{p}/respond", json={"rejected": True}, headers=h).status_code
    ),
    "POST /clarification/{id}/cancel": lambda c, p, h: (
        c.post(f"/api/v1/clarification/{p}/cancel", headers=h).status_code
    ),
    "GET /clarification/{id}/wait": lambda c, p, h: (
        c.get(f"/api/v1/clarification/{p}/wait", headers=h).status_code
    ),
}


def _quiet() -> None:
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run(database_url: str, samples: int, warmup: int) -> bool:
    clarion = build_clarion(Settings(database_url=database_url, auth_enabled=True))
    auth = clarion.authentication
    alice = {"Authorization": f"Bearer {auth.issue_token(auth.create_user('alice').id).token}"}
    bob = {"Authorization": f"Bearer {auth.issue_token(auth.create_user('bob').id).token}"}
    within = True
    with TestClient(clarion.asgi_app, base_url=BASE_URL) as client:
        workspace = client.post("/api/v1/workspaces", json={"name": "a"}, headers=alice).json()
        task = client.post(
            "/api/v1/tasks", json={"title": "t", "workspace_id": workspace["id"]}, headers=alice
        ).json()
        session = client.post(f"/api/v1/tasks/{task['id']}/sessions", json={}, headers=alice)
        question = {
            "id": "q1",
            "title": "T",
            "prompt": "Which?",
            "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}],
        }
        created = client.post(
            "/api/v1/clarification/request",
            json={"session_id": session.json()["id"], "questions": [question]},
            headers=alice,
        )
        foreign = created.json()["pending_id"]
        print(f"database: {clarion.database_label}; {samples} samples per kind and route")
        print(
            f"{'route':36} {'foreign ms':>11} {'fabricated ms':>14} {'diff ms':>8}   p90 f / p90 x"
        )
        for label, call in ROUTES.items():
            timings: dict[str, list[float]] = {"foreign": [], "fabricated": []}
            for round_ in range(warmup + samples):
                for kind in ("foreign", "fabricated"):
                    pending_id = foreign if kind == "foreign" else str(uuid.uuid4())
                    started = time.perf_counter()
                    status = call(client, pending_id, bob)
                    elapsed = (time.perf_counter() - started) * 1000
                    if status != 404:
                        raise SystemExit(f"{label} {kind}: expected 404, got {status}")
                    if round_ >= warmup:
                        timings[kind].append(elapsed)
            f_med = statistics.median(timings["foreign"])
            x_med = statistics.median(timings["fabricated"])
            diff = f_med - x_med
            within = within and abs(diff) <= TARGET_MS
            print(
                f"{label:36} {f_med:11.3f} {x_med:14.3f} {diff:+8.3f}   "
                f"{_percentile(timings['foreign'], 0.9):.3f} / "
                f"{_percentile(timings['fabricated'], 0.9):.3f}"
            )
    clarion.close()
    print(f"medians within {TARGET_MS} ms on every route: {'yes' if within else 'NO'}")
    return within


@contextmanager
def scratch_postgres(server_url: str) -> Iterator[str]:
    """A fresh database on the server of ``server_url``, dropped afterwards."""
    server = make_url(server_url)
    name = f"clarion_timing_{uuid.uuid4().hex[:12]}"
    params = {
        "host": server.host or "127.0.0.1",
        "port": server.port or 5432,
        "user": server.username or "postgres",
        "password": server.password,
        "dbname": server.database or "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**params) as connection:  # type: ignore[arg-type]
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(**params) as connection:  # type: ignore[arg-type]
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-url", help="a PostgreSQL server (default: SQLite)")
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    _quiet()
    if args.postgres_url:
        with scratch_postgres(args.postgres_url) as url:
            run(url, args.samples, args.warmup)
        return
    with tempfile.TemporaryDirectory() as folder:
        run(f"sqlite:///{Path(folder) / 'timing.db'}", args.samples, args.warmup)


if __name__ == "__main__":
    main()
