"""Timing oracle check: does a bundle id that exists but belongs to someone else answer as fast
as an id that never existed? (issue #14: the medians must lie within 0.2 ms.)

With authentication enabled, alice asks one bundle; bob (who may not see it) then calls the
REST routes that take a pending id or a session id, with alice's id ("foreign") and with a
fresh random id ("fabricated"), alternating (and alternating which goes first). Per route the
script prints the median wall-clock time of each kind and their difference, the same for the
process's CPU time (which a busy machine inflates far less: the wall clock also counts the
time spent waiting for a core), and the median of the wall-clock differences of each
foreign/fabricated pair (timed back to back). Every call must be the same 404 both ways.

Run::

    .venv/bin/python -m benchmarks.not_found_timing                 # SQLite, 200 samples each
    .venv/bin/python -m benchmarks.not_found_timing --postgres-url postgresql+psycopg://postgres@127.0.0.1:5432/test

On PostgreSQL a scratch database is created on that server and dropped afterwards
(:mod:`benchmarks.scratch`).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
import uuid
from collections.abc import Callable

import structlog
from starlette.testclient import TestClient

from benchmarks.scratch import scratch_postgres, scratch_sqlite
from clarion.app.root.compose import build_clarion
from clarion.app.root.settings import Settings

BASE_URL = "http://127.0.0.1:8765"
TARGET_MS = 0.2
Call = Callable[[TestClient, str, dict[str, str]], int]
QUESTION = {
    "id": "q1",
    "title": "T",
    "prompt": "Which?",
    "options": [{"label": "A", "description": "a"}, {"label": "B", "description": "b"}],
}
# Per route: which kind of id it takes ("bundle" or "session") and the call.
ROUTES: dict[str, tuple[str, Call]] = {
    "GET /clarification/{id}": (
        "bundle",
        lambda c, p, h: c.get(f"/api/v1/clarification/{p}", headers=h).status_code,
    ),
    "POST /clarification/{id}/respond": (
        "bundle",
        lambda c, p, h: (
            c.post(
                f"/api/v1/clarification/{p}/respond", json={"rejected": True}, headers=h
            ).status_code
        ),
    ),
    "POST /clarification/{id}/cancel": (
        "bundle",
        lambda c, p, h: c.post(f"/api/v1/clarification/{p}/cancel", headers=h).status_code,
    ),
    "GET /clarification/{id}/wait": (
        "bundle",
        lambda c, p, h: c.get(f"/api/v1/clarification/{p}/wait", headers=h).status_code,
    ),
    "GET /sessions/{id}/messages": (
        "session",
        lambda c, s, h: c.get(f"/api/v1/sessions/{s}/messages", headers=h).status_code,
    ),
    "POST /clarification/request (session)": (
        "session",
        lambda c, s, h: (
            c.post(
                "/api/v1/clarification/request",
                json={"session_id": s, "questions": [QUESTION]},
                headers=h,
            ).status_code
        ),
    ),
}


def _quiet() -> None:
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))


def run(database_url: str, samples: int, warmup: int) -> bool:
    clarion = build_clarion(Settings(database_url=database_url, auth_enabled=True))
    clarion.upgrade()  # building migrates nothing; users are created before the lifespan runs
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
        session_id = session.json()["id"]
        created = client.post(
            "/api/v1/clarification/request",
            json={"session_id": session_id, "questions": [QUESTION]},
            headers=alice,
        )
        foreign_ids = {"bundle": created.json()["pending_id"], "session": session_id}
        print(f"database: {clarion.database_label}; {samples} samples per kind and route")
        print(
            f"{'median, ms':38} {'foreign':>8} {'fabricated':>10} {'diff':>7}"
            f"   {'cpu foreign':>11} {'cpu fabricated':>14} {'cpu diff':>8}   {'paired':>7}"
        )
        for label, (id_kind, call) in ROUTES.items():
            foreign = foreign_ids[id_kind]
            wall: dict[str, list[float]] = {"foreign": [], "fabricated": []}
            cpu: dict[str, list[float]] = {"foreign": [], "fabricated": []}
            for round_ in range(warmup + samples):
                # Which kind goes first alternates, so neither is always the one that pays
                # for following the other.
                kinds = ("foreign", "fabricated") if round_ % 2 else ("fabricated", "foreign")
                for kind in kinds:
                    some_id = foreign if kind == "foreign" else str(uuid.uuid4())
                    started, started_cpu = time.perf_counter(), time.process_time()
                    status = call(client, some_id, bob)
                    elapsed = (time.perf_counter() - started) * 1000
                    elapsed_cpu = (time.process_time() - started_cpu) * 1000
                    if status != 404:
                        raise SystemExit(f"{label} {kind}: expected 404, got {status}")
                    if round_ >= warmup:
                        wall[kind].append(elapsed)
                        cpu[kind].append(elapsed_cpu)
            figures = []
            for timings in (wall, cpu):
                f_med = statistics.median(timings["foreign"])
                x_med = statistics.median(timings["fabricated"])
                figures.append((f_med, x_med, f_med - x_med))
            (wf, wx, wd), (cf, cx, cd) = figures
            # Each round times a foreign and a fabricated call back to back: the median of the
            # per-round differences cancels load that drifts slower than one round.
            paired = statistics.median(
                f - x for f, x in zip(wall["foreign"], wall["fabricated"], strict=True)
            )
            within = within and abs(wd) <= TARGET_MS
            print(
                f"{label:38} {wf:8.3f} {wx:10.3f} {wd:+7.3f}"
                f"   {cf:11.3f} {cx:14.3f} {cd:+8.3f}   {paired:+7.3f}"
            )
    clarion.close()
    print(f"wall-clock medians within {TARGET_MS} ms on every route: {'yes' if within else 'NO'}")
    return within


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
    with scratch_sqlite() as url:
        run(url, args.samples, args.warmup)


if __name__ == "__main__":
    main()
