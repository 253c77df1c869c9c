"""Draw list-page latency against pending bundles from ``sql_bench --json`` files.

    .venv/bin/pip install -e '.[bench]'   # matplotlib, for this script only
    .venv/bin/python -m benchmarks.plot_list before.json after.json -o docs/images/list-latency.png

Each JSON file is one ``benchmarks/sql_bench.py --json FILE --label NAME`` run; every database
in it becomes one line (median of the list page of 50, log–log axes), named by the run's label.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

STYLES = {"sqlite": "tab:blue", "postgresql": "tab:orange"}


def series(document: dict[str, Any]) -> list[tuple[str, list[int], list[float]]]:
    """(database, pending counts, median ms) for each database of one run."""
    found = []
    for database, figures in document["figures"].items():
        pending = figures.get("list", {}).get("pending", {})
        counts = sorted(int(n) for n in pending)
        found.append((database, counts, [pending[str(n)]["median_ms"] for n in counts]))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="sql_bench --json files")
    parser.add_argument("-o", "--output", type=Path, default=Path("list-latency.png"))
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 4.5), dpi=120)
    for number, path in enumerate(args.runs):
        document = json.loads(path.read_text())
        label = document.get("label") or path.stem
        for database, counts, medians in series(document):
            axes.plot(
                counts,
                medians,
                marker="o",
                color=STYLES.get(database),
                # the last run solid, earlier ones dashed and dotted in turn
                linestyle="-" if number == len(args.runs) - 1 else ("--", ":")[number % 2],
                label=f"{database}, {label}",
            )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("pending bundles")
    axes.set_ylabel("list page of 50, median (ms)")
    axes.set_title("GET /clarification/pending: one page against the backlog")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(loc="upper left", fontsize="small", framealpha=0.9)  # the empty corner
    figure.tight_layout()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
