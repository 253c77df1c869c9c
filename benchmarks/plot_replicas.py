"""Draw ``replicas_bench --json`` runs side by side as one SVG (no plotting library needed).

    .venv/bin/python -m benchmarks.plot_replicas before.json after.json -o docs/images/replicas.svg

Three panels of horizontal bars, one bar per run (labelled by the file's stem, or by
``NAME=FILE``): CPU per answer (server, PostgreSQL), answer-to-wake (p50, p99) and the list
page (idle, under load), each panel on its own millisecond scale.
"""

from __future__ import annotations

import argparse
import json
from html import escape
from pathlib import Path
from typing import Any, Final

COLOURS: Final = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3")
WIDTH: Final = 760
LEFT: Final = 210
BAR: Final = 14
GAP: Final = 6

Panel = tuple[str, list[tuple[str, str]]]
PANELS: Final[list[Panel]] = [
    (
        "CPU per answer (ms)",
        [("server", "server_cpu_ms_per_answer"), ("PostgreSQL", "database_cpu_ms_per_answer")],
    ),
    ("answer-to-wake (ms)", [("p50", "wake_ms.p50"), ("p99", "wake_ms.p99")]),
    (
        "list page of 50, median (ms)",
        [("idle", "list_ms.idle_median"), ("under load", "list_ms.load_median")],
    ),
]


def value(figures: dict[str, Any], path: str) -> float:
    """``a.b`` → ``figures["a"]["b"]``."""
    found: Any = figures
    for key in path.split("."):
        found = found[key]
    return float(found)


def _panel(
    top: float, title: str, rows: list[tuple[str, str]], runs: list[tuple[str, dict[str, Any]]]
) -> tuple[list[str], float]:
    """The SVG elements of one panel starting at ``top``, and where the next one starts."""
    scale_max = max(value(f, path) for _, f in runs for _, path in rows) or 1.0
    span = WIDTH - LEFT - 70
    parts = [f'<text x="10" y="{top + 14}" font-weight="bold">{escape(title)}</text>']
    y = top + 24
    for name, path in rows:
        for number, (label, figures) in enumerate(runs):
            amount = value(figures, path)
            length = span * amount / scale_max
            colour = COLOURS[number % len(COLOURS)]
            parts.append(
                f'<text x="{LEFT - 8}" y="{y + BAR - 3}" text-anchor="end">'
                f"{escape(name)}, {escape(label)}</text>"
            )
            parts.append(
                f'<rect x="{LEFT}" y="{y}" width="{length:.1f}" height="{BAR}" fill="{colour}"/>'
            )
            parts.append(f'<text x="{LEFT + length + 5:.1f}" y="{y + BAR - 3}">{amount:.1f}</text>')
            y += BAR + GAP
        y += GAP
    return parts, y + 10


def svg(runs: list[tuple[str, dict[str, Any]]]) -> str:
    first = runs[0][1]
    sizes = first["sizes"]
    subtitle = (
        f"{first['database']}, {sizes['replicas']} replica(s), {sizes['agents']} parked, "
        f"{sizes['pending']} pending, {sizes['streams']} streams, offered {sizes['rate']:g}/s"
    )
    parts = [
        '<text x="10" y="20" font-size="15" font-weight="bold">'
        "replicas_bench: one answer to a parked agent</text>",
        f'<text x="10" y="38" fill="#555">{escape(subtitle)}</text>',
    ]
    top = 50.0
    for title, rows in PANELS:
        drawn, top = _panel(top, title, rows, runs)
        parts += drawn
    height = int(top)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">\n'
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>\n'
        + "\n".join(parts)
        + "\n</svg>\n"
    )


def _run(argument: str) -> tuple[str, dict[str, Any]]:
    label, _, name = argument.rpartition("=")
    path = Path(name)
    return label or path.stem, json.loads(path.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("runs", nargs="+", help="replicas_bench --json files ([NAME=]FILE)")
    parser.add_argument("-o", "--output", type=Path, default=Path("replicas.svg"))
    args = parser.parse_args(argv)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(svg([_run(argument) for argument in args.runs]))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
