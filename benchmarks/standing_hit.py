"""Issue #33's closing figure: the latency of a standing-approval hit — an approval request
that a standing approval approves at once (ask to decision, one ``POST
/api/v1/approvals/request`` answered ``approved``) — against a normal ask's create time (the
same request when nothing matches, answered ``pending``; and a plain question's ``POST
/api/v1/clarification/request``), measured in one run against one served Clarion on SQLite
(or the PostgreSQL database ``--database-url`` names)::

    .venv/bin/python -m benchmarks.standing_hit                 # 200 requests of each kind
    .venv/bin/python -m benchmarks.standing_hit --requests 50

Each pending request is superseded (a new turn, not timed) before the next, so the session
never reaches its active-bundle limit. Figures only, no assertion.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
import structlog

from tests.integration.rest.approval_race import API, Race, served_race

COMMAND = {"name": "shell", "arguments": {"command": "make deploy", "cwd": "/repo"}}


def _timed(
    http: httpx2.Client, path: str, body: dict[str, Any], race: Race, expected: int
) -> tuple[float, Any]:
    """POST ``body`` to ``path`` as the administrator; the seconds it took, and the JSON."""
    started = time.perf_counter()
    response = http.post(f"{API}/{path}", json=body, headers=race.admin)
    elapsed = time.perf_counter() - started
    if response.status_code != expected:
        raise RuntimeError(f"expected {expected}, got {response.status_code}: {response.text}")
    return elapsed, response.json()


def _grant(http: httpx2.Client, race: Race) -> None:
    """One request, approved by a voter who allows the same command for an hour."""
    body = {"session_id": race.session_id, "action": COMMAND}
    created = http.post(f"{API}/approvals/request", json=body, headers=race.admin).json()
    http.post(
        f"{API}/approvals/{created['pending_id']}/decision",
        json={"decision": "approve", "allow_for_minutes": 60},
        headers=race.voters[0].headers,
    ).raise_for_status()


def _measure(http: httpx2.Client, race: Race, requests: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"standing hit": [], "approval create": [], "question": []}
    hit = {"session_id": race.session_id, "action": COMMAND}
    for number in range(requests):
        seconds, view = _timed(http, "approvals/request", hit, race, 200)
        assert view["standing_approval_id"], view
        figures["standing hit"].append(seconds)
        other = {"name": "shell", "arguments": {"command": f"git push {number}", "cwd": "/repo"}}
        body = {"session_id": race.session_id, "action": other}
        seconds, _ = _timed(http, "approvals/request", body, race, 201)
        figures["approval create"].append(seconds)
        _new_turn(http, race)
        question = {
            "session_id": race.session_id,
            "questions": [
                {
                    "prompt": f"Ship {number}?",
                    "options": [
                        {"label": "Yes", "description": "ship"},
                        {"label": "No", "description": "wait"},
                    ],
                }
            ],
        }
        seconds, _ = _timed(http, "clarification/request", question, race, 200)
        figures["question"].append(seconds)
        _new_turn(http, race)
    return figures


def _new_turn(http: httpx2.Client, race: Race) -> None:
    http.post(f"{API}/sessions/{race.session_id}/turns", headers=race.admin).raise_for_status()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--database-url", default="", help="default: a new SQLite file")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    with tempfile.TemporaryDirectory() as folder:
        url = args.database_url or f"sqlite:///{Path(folder) / 'standing.db'}"
        with served_race(url, voters=1) as race, httpx2.Client(base_url=race.url) as http:
            _grant(http, race)
            figures = _measure(http, race, args.requests)
    print(f"database={url.split(':', 1)[0]} requests={args.requests} (milliseconds)")
    for label, seconds in figures.items():
        ms = sorted(s * 1000 for s in seconds)
        p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
        print(
            f"  {label:16s} median={statistics.median(ms):7.2f}  p95={p95:7.2f}  max={ms[-1]:7.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
