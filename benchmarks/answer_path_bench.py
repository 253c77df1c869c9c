"""Store work and CPU per REST answer with authentication enabled (see docs/performance.md).

One application instance over SQLite (and PostgreSQL when ``CLARION_TEST_POSTGRES_URL`` or
``--postgres-url`` names a server), auth enabled, every caller a real user with a personal
access token owning a workspace, a task and a session. ``--answers`` bundles are created over
``POST /clarification/request``, then each is answered over ``POST …/respond`` — once with
the bearer token, once with a browser session cookie (and its CSRF header). Prints, per
credential, the SQL statements and transactions per answer (all of them, and those before the
claim's ``UPDATE``) and the CPU time per answer of this process (the multiprocess benchmark's
measure, CPU per answer, taken here in one process: it includes the in-process HTTP client).
Figures only; nothing is asserted.

    .venv/bin/python -m benchmarks.answer_path_bench [--answers 200] [--backends sqlite]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from typing import Any

import sqlalchemy as sa
import structlog
from sqlalchemy import event
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from benchmarks.scratch import add_backend_flags, chosen_backends
from clarion.adapters.sql import upgrade_database
from tests.integration.rest.harness import RestWorld, answers, ask, setup_caller, sql_ports


class Counter:
    """SQL statements and transactions run on ``engine``; ``claimed`` marks the claim."""

    def __init__(self, engine: Engine) -> None:
        self.statements = 0
        self.transactions = 0
        self.before_claim: int | None = None
        self.transactions_before_claim: int | None = None
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "begin", self._begin)

    def _statement(self, _c: Any, _cur: Any, statement: str, *_rest: Any) -> None:
        text = statement.lstrip().upper()
        if os.environ.get("ANSWER_BENCH_TRACE"):
            print("   SQL:", " ".join(text.split())[:100])
        if text.startswith(("BEGIN", "COMMIT", "ROLLBACK")):
            return
        if self.before_claim is None and text.startswith("UPDATE TASK_SESSION_MESSAGES"):
            self.before_claim = self.statements
            self.transactions_before_claim = self.transactions - 1
        self.statements += 1

    def _begin(self, _connection: Any) -> None:
        self.transactions += 1

    def reset(self) -> None:
        self.statements = self.transactions = 0
        self.before_claim = self.transactions_before_claim = None


def measure(engine: Engine, count: int) -> dict[str, dict[str, float]]:
    upgrade_database(engine)
    world = RestWorld.build(auth_enabled=True, ports=sql_ports(engine))
    figures: dict[str, dict[str, float]] = {}
    with TestClient(world.app, base_url="http://127.0.0.1") as client:
        caller = setup_caller(client, world, "answerer")
        token = caller.headers["Authorization"].removeprefix("Bearer ")
        login = client.post("/api/v1/auth/login", json={"token": token})
        csrf = login.json()["csrf_token"]
        cookie = client.cookies["clarion_session"]
        client.cookies.clear()
        credentials: dict[str, tuple[dict[str, str], dict[str, str]]] = {
            "bearer token": (caller.headers, {}),
            "session cookie": ({"X-CSRF-Token": csrf}, {"clarion_session": cookie}),
        }
        counter = Counter(engine)
        for name, (headers, cookies) in credentials.items():
            client.cookies.clear()
            client.cookies.update(cookies)

            def answer(headers: dict[str, str] = headers, *, settle: bool = False) -> float:
                """Ask (with the token), then answer; CPU seconds of the answer alone. An
                answer resumes its session on a new turn, so every answer gets a new bundle."""
                pending_id = ask(client, caller)
                counter.reset()
                started = time.process_time()
                response = client.post(
                    f"/api/v1/clarification/{pending_id}/respond",
                    json={"answers": answers()},
                    headers=headers,
                )
                spent = time.process_time() - started
                if response.status_code != 200 or not response.json().get("accepted", True):
                    raise RuntimeError(f"answer failed: {response.status_code} {response.text}")
                if settle:
                    time.sleep(1.0)  # work the answer left running counts too
                return spent

            answer()  # warm: statement caches, connections
            answer(settle=True)
            statements = float(counter.statements)
            before = float(counter.before_claim or 0)
            transactions = float(counter.transactions)
            transactions_before = float(counter.transactions_before_claim or 0)
            cpu = [answer() * 1000 for _ in range(count)]
            figures[name] = {
                "statements": statements,
                "statements_before_claim": before,
                "transactions": transactions,
                "transactions_before_claim": transactions_before,
                "cpu_ms_median": statistics.median(cpu),
                "cpu_ms_mean": statistics.fmean(cpu),
            }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=200)
    add_backend_flags(parser)
    args = parser.parse_args(argv)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    print(f"SQLAlchemy {sa.__version__}", flush=True)
    for name, make in chosen_backends(args):
        with make() as engine:
            for credential, value in measure(engine, args.answers).items():
                print(
                    f"{name}, {credential}: {value['statements']:.0f} statements in "
                    f"{value['transactions']:.0f} transactions per answer "
                    f"({value['statements_before_claim']:.0f} statements in "
                    f"{value['transactions_before_claim']:.0f} transactions before the claim); "
                    f"CPU per answer median {value['cpu_ms_median']:.2f} ms, "
                    f"mean {value['cpu_ms_mean']:.2f} ms ({args.answers} answers)",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
