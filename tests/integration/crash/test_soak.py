"""Issue #13: a randomized ``kill -9`` soak. Each round creates bundles nobody waits for, lets
several answerers race on every bundle across the serving processes, kills a process with
SIGKILL at a random moment, restarts it, answers what is still open, and then checks every
bundle: answered, with exactly one resume that carries the stored answer — never two different
answers delivered, never answered without its resume, never stuck.

SQLite runs one serving process (a second one is refused by the file lock); PostgreSQL runs two.
Bounded: ``CLARION_SOAK_ROUNDS`` (3) rounds of ``CLARION_SOAK_BUNDLES`` (60) bundles;
``CLARION_SOAK_SEED`` replays a run. The figures are printed at the end (``pytest -s``)."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest

from tests.integration.crash.serving import (
    answer_body,
    new_bundle,
    resumes,
    start_ready,
)
from tests.integration.multiprocess.cluster import Replica

ROUNDS = int(os.environ.get("CLARION_SOAK_ROUNDS", "3"))
BUNDLES = int(os.environ.get("CLARION_SOAK_BUNDLES", "60"))
ANSWERERS = 3
SETTLE_TIMEOUT_S = 90.0
# PostgreSQL: recover unconfirmed deliveries of a killed process quickly (the deliveries in
# this test take milliseconds, far below this grace).
FAST_RECOVERY = {"CLARION_RECOVERY_GRACE_S": "4", "CLARION_RECOVERY_INTERVAL_S": "1"}


@attrs.define
class Figures:
    rounds: int = 0
    bundles: int = 0
    kills: int = 0
    answers_sent: int = 0
    answers_cut: int = 0  # answers whose process died under them (no reply) or that got a 500
    anomalies: list[str] = attrs.field(factory=list)


def _answer(base: str, pending_id: str, body: dict[str, Any]) -> int:
    """One answer; the status code, or 0 when the process went away."""
    try:
        return httpx2.post(
            f"{base}/api/v1/clarification/{pending_id}/respond", json=body, timeout=60
        ).status_code
    except httpx2.TransportError:
        return 0


def _rows(http: httpx2.Client, base: str, session_id: str) -> list[dict[str, Any]]:
    messages = http.get(f"{base}/api/v1/sessions/{session_id}/messages").json()["messages"]
    return [m for m in messages if m["type"] == "clarification_request"]


def _settled(http: httpx2.Client, base: str, session_id: str) -> str:
    """``answered`` (no delivery still marked), ``pending``, or ``in-flight``."""
    rows = _rows(http, base, session_id)
    if any(row["metadata"].get("response_delivery_pending") for row in rows):
        return "in-flight"
    statuses = {row["metadata"].get("status") for row in rows}
    return "answered" if statuses == {"answered"} else "pending"


def _start(url: str, name: str, folder: Path, env: dict[str, str]) -> Replica:
    return start_ready(url, name, folder, env)


def _round(
    url: str,
    folder: Path,
    processes: int,
    rng: random.Random,
    figures: Figures,
    number: int,
) -> None:
    env = dict(FAST_RECOVERY)
    servers = [_start(url, f"r{number}-p{i}", folder, env) for i in range(processes)]
    try:
        with httpx2.Client(timeout=60) as http:
            made = [new_bundle(http, servers[0].base_url) for _ in range(BUNDLES)]
        bases = [server.base_url for server in servers]
        jobs = [(pending_id, answerer) for _, pending_id in made for answerer in range(ANSWERERS)]
        rng.shuffle(jobs)
        victims = rng.sample(range(processes), rng.randint(1, processes))
        # The kill lands after a random number of answers got their reply: mid-burst.
        kill_after = rng.randint(1, len(jobs) - 1)
        done = 0
        lock = threading.Lock()

        def answer(job: tuple[str, int], target: str, body: dict[str, Any]) -> int:
            nonlocal done
            status = _answer(target, job[0], body)
            with lock:
                done += 1
                if done == kill_after:
                    for victim in victims:
                        servers[victim].kill()
            return status

        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = [
                pool.submit(
                    answer,
                    job,
                    rng.choice(bases),
                    {
                        "answers": [
                            {
                                **answer_body(rng.randint(1, 2))["answers"][0],
                                "custom_text": f"answerer {job[1]}",
                            }
                        ]
                    },
                )
                for job in jobs
            ]
            statuses = [future.result() for future in futures]
        figures.kills += len(victims)
        figures.answers_sent += len(jobs)
        figures.answers_cut += sum(1 for status in statuses if status in (0, 500))
        for victim in victims:
            servers[victim] = _start(url, f"r{number}-p{victim}-again", folder, env)
        bases = [server.base_url for server in servers]  # the restarted ones listen elsewhere
        base = bases[0]
        with httpx2.Client(timeout=60) as http:
            deadline = time.monotonic() + SETTLE_TIMEOUT_S
            open_ids = dict(made)
            while open_ids:
                for session_id, pending_id in list(open_ids.items()):
                    state = _settled(http, base, session_id)
                    if state == "answered":
                        del open_ids[session_id]
                    elif state == "pending":
                        _answer(rng.choice(bases), pending_id, answer_body(rng.randint(1, 2)))
                if open_ids and time.monotonic() > deadline:
                    figures.anomalies.extend(f"stuck: {p}" for p in open_ids.values())
                    break
                if open_ids:
                    time.sleep(0.2)  # recovery of a killed process's deliveries is periodic
            for session_id, pending_id in made:
                _check(http, base, session_id, pending_id, figures)
        figures.rounds += 1
        figures.bundles += len(made)
    finally:
        for server in servers:
            server.kill()


def _check(
    http: httpx2.Client, base: str, session_id: str, pending_id: str, figures: Figures
) -> None:
    rows = _rows(http, base, session_id)
    stored = [row["metadata"].get("response") for row in rows]
    if {row["metadata"].get("status") for row in rows} != {"answered"}:
        figures.anomalies.append(f"not answered: {pending_id}")
        return
    if any(row["metadata"].get("response_delivery_pending") for row in rows):
        figures.anomalies.append(f"still marked: {pending_id}")
    records = [
        r for r in resumes(http, base, session_id) if r["metadata"]["pending_id"] == pending_id
    ]
    delivered = {repr(record["metadata"]["answers"]) for record in records}
    if len(delivered) > 1:
        figures.anomalies.append(f"two different answers delivered: {pending_id}")
    if len(records) != 1:
        figures.anomalies.append(f"{len(records)} resumes: {pending_id}")
    elif records[0]["metadata"]["answers"] != stored:
        figures.anomalies.append(f"resume differs from the stored answer: {pending_id}")


@pytest.fixture(
    name="soak_url", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def fixture_soak_url(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, int]:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'soak.db'}", 1
    make: Callable[[], str] = request.getfixturevalue("make_postgres_database")
    return make(), 2


@pytest.mark.slow
def test_randomized_kill_9_soak_loses_nothing_and_delivers_each_answer_once(
    soak_url: tuple[str, int], tmp_path: Path
) -> None:
    url, processes = soak_url
    seed = int(os.environ.get("CLARION_SOAK_SEED", str(random.SystemRandom().randrange(10**9))))
    rng = random.Random(seed)
    figures = Figures()
    for number in range(ROUNDS):
        _round(url, tmp_path, processes, rng, figures, number)
    backend = url.split(":", 1)[0]
    print(
        f"\nsoak {backend} ({processes} process(es), seed {seed}): rounds {figures.rounds}, "
        f"bundles {figures.bundles}, answers sent {figures.answers_sent} "
        f"({figures.answers_cut} cut by a kill or refused), "
        f"kills {figures.kills}, anomalies {len(figures.anomalies)}"
    )
    assert figures.anomalies == [], f"seed {seed}: {figures.anomalies}"
    assert figures.rounds == ROUNDS
