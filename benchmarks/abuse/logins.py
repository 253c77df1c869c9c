"""Issue #29 S11: how many browser sessions 500 sign-ins leave live, and what 30 failed
sign-ins in a row get.

Starts ``clarion serve`` (the executable given by ``--clarion``; SQLite in a temporary folder,
authentication enabled, a free loopback port) with one user, signs in 500 times with the
user's token (``POST /api/v1/auth/login``), counts the user's live sessions
(``clarion tokens list --json``), then sends 30 sign-ins with a wrong secret and prints the
statuses they got, and what a sign-in with the right token from the same address gets next.

    python -m benchmarks.abuse.logins --clarion /work/wt/base/.venv/bin/clarion
    python -m benchmarks.abuse.logins --clarion .venv/bin/clarion
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import httpx2

from benchmarks.abuse.agents import create_user
from benchmarks.abuse.lists import database_url, served

LOGINS = 500
FAILURES = 30


def _live_sessions(clarion: str, folder: Path, user_id: str) -> int:
    listed = subprocess.run(
        [clarion, "tokens", "list", user_id, "--json", "--database-url", database_url(folder)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    records = json.loads(listed)
    rows = records["tokens"] if isinstance(records, dict) else records
    return sum(1 for row in rows if row["kind"] == "session" and row["status"] == "active")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--clarion", required=True, help="the clarion executable to serve")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="clarion-abuse-logins-") as name:
        folder = Path(name)
        user_id, token = create_user(args.clarion, folder, "ann")
        wrong = token[: -len("x" * 8)] + "wrongsec"
        with (
            served(args.clarion, folder, {"CLARION_AUTH": "enabled"}) as (base, _process),
            httpx2.Client(base_url=base, timeout=60) as http,
        ):
            for _ in range(LOGINS):
                http.cookies.clear()
                assert http.post("/api/v1/auth/login", json={"token": token}).status_code == 200
            live = _live_sessions(args.clarion, folder, user_id)
            statuses: Counter[int] = Counter()
            retry_after = ""
            for _ in range(FAILURES):
                refused = http.post("/api/v1/auth/login", json={"token": wrong})
                statuses[refused.status_code] += 1
                retry_after = refused.headers.get("retry-after", retry_after)
            right = http.post("/api/v1/auth/login", json={"token": token})
        print(f"live browser sessions after {LOGINS} sign-ins: {live}")
        counts = ", ".join(f"{count} x {status}" for status, count in sorted(statuses.items()))
        print(f"{FAILURES} sign-ins with a wrong secret: {counts}")
        print(f"last Retry-After: {retry_after or 'none'}")
        print(f"then the right token from the same address: {right.status_code}")


if __name__ == "__main__":
    main()
