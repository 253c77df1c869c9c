"""The list page's latency as a person's browser meets it, from a process of its own
(issue #35): ``replicas_bench`` runs its agent fleet, event streams and answerers in one
asyncio process, whose own loop and GIL would add their queueing to every sample taken there.

Prints one latency (seconds) per line for ``GET …/api/v1/clarification/pending?limit=50`` on
one kept-alive connection (stdlib ``http.client``), after one warm-up request:

- ``--count N``: N requests back to back, then exits (the idle figure);
- ``--every S``: one request every S seconds until standard input closes (the figure under
  load: the bench closes it when its answer window ends).

Every response must be a 200 with 50 bundles, else it exits 1 naming what it got::

    .venv/bin/python -m benchmarks.list_probe http://127.0.0.1:8000 --count 20
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import select
import sys
import time
from urllib.parse import urlsplit

PATH = "/api/v1/clarification/pending?limit=50"
PAGE = 50


def _one(connection: http.client.HTTPConnection) -> float:
    started = time.perf_counter()
    connection.request("GET", PATH)
    response = connection.getresponse()
    body = response.read()
    spent = time.perf_counter() - started
    if response.status != 200 or len(json.loads(body)["bundles"]) != PAGE:
        raise SystemExit(f"list page: {response.status} {body[:200]!r}")
    return spent


def _stdin_closed(timeout: float) -> bool:
    """Wait up to ``timeout`` s; True once standard input has closed (EOF)."""
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    return bool(ready) and not os.read(sys.stdin.fileno(), 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--count", type=int)
    mode.add_argument("--every", type=float)
    args = parser.parse_args(argv)
    address = urlsplit(args.base_url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=60)
    _one(connection)
    if args.count is not None:
        for _ in range(args.count):
            print(_one(connection), flush=True)
        return 0
    while True:
        print(_one(connection), flush=True)
        if _stdin_closed(args.every):
            return 0


if __name__ == "__main__":
    sys.exit(main())
