"""Every abuse bench of issue #29 in one run, against one ``clarion`` executable:

    python -m benchmarks.abuse --clarion /path/to/before/.venv/bin/clarion
    python -m benchmarks.abuse --clarion .venv/bin/clarion [--only edge,labels]

Each bench starts its own servers on loopback, prints its figures and stops them; see each
module (``python -m benchmarks.abuse.<name> --help``) for its own flags and what it measures.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

BENCHES = ("edge", "outbound", "labels", "lists", "agents", "logins")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.abuse", description=__doc__)
    parser.add_argument("--clarion", required=True, help="the clarion executable to abuse")
    parser.add_argument(
        "--only", default=",".join(BENCHES), help=f"comma-separated subset of {BENCHES}"
    )
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(BENCHES))
    if unknown:
        parser.error(f"unknown bench(es): {', '.join(unknown)}; choose from {', '.join(BENCHES)}")
    failed = 0
    for name in chosen:
        print(f"== {name}", flush=True)
        module = importlib.import_module(f"benchmarks.abuse.{name}")
        code = module.main(["--clarion", args.clarion])
        failed += 1 if code else 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
