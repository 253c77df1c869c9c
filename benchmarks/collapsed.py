"""Summarize collapsed stacks (py-spy's ``--format raw``, one ``frame;frame;... COUNT`` per
line, outermost first): the top functions by self and by inclusive samples, as shares of
all samples — what ``replicas_bench --py-spy FOLDER`` records::

    .venv/bin/python -m benchmarks.collapsed /tmp/spy/r0-window.txt
    .venv/bin/python -m benchmarks.collapsed /tmp/spy/r0-window.txt --under tasks.py:TaskMethods.get
    .venv/bin/python -m benchmarks.collapsed /tmp/spy/r0-window.txt --top 40 --callers session_facts

A frame is ``function (file:line)``; lines are dropped so that calls from several lines of
one function add up. ``--under NAME`` keeps the stacks through a frame whose name contains
NAME, with shares still of all samples; ``--callers NAME`` prints who calls the frames named
NAME, weighted by samples.
"""

from __future__ import annotations

import argparse
import collections
import re
from collections.abc import Iterator
from pathlib import Path

_LINE = re.compile(r" \(([^():]*?)(?::\d+)?\)$")


def _frame(text: str) -> str:
    """``function (path:line)`` as ``path:function`` (the line dropped)."""
    match = _LINE.search(text)
    if match is None:
        return text
    path = match.group(1)
    for marker in ("site-packages/", "lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{path}:{text[: match.start()]}"


def stacks(path: Path) -> Iterator[tuple[tuple[str, ...], int]]:
    """Each stack (outermost first, the thread's own frame left out) and its samples."""
    for line in path.read_text(errors="replace").splitlines():
        text, _, count = line.rpartition(" ")
        if not text or not count.isdigit():
            continue
        frames = text.split(";")
        if frames and frames[0].startswith(("thread (", "process ")):
            frames = frames[1:]
        yield tuple(_frame(frame) for frame in frames), int(count)


def summary(path: Path, *, top: int, under: str = "", callers: str = "") -> str:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    calling: collections.Counter[str] = collections.Counter()
    total = 0
    kept = 0
    for frames, count in stacks(path):
        total += count
        if under and not any(under in frame for frame in frames):
            continue
        kept += count
        if frames:
            own[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count
        if callers:
            for index, frame in enumerate(frames):
                if callers in frame and index:
                    calling[frames[index - 1]] += count
                    break
    total = total or 1
    lines = [f"{total} samples; {100 * kept / total:.1f}% kept", "", "self:"]
    lines += [f"{100 * n / total:6.1f}% {name}" for name, n in own.most_common(top)]
    lines += ["", "inclusive:"]
    lines += [f"{100 * n / total:6.1f}% {name}" for name, n in inclusive.most_common(2 * top)]
    if callers:
        lines += ["", f"callers of {callers}:"]
        lines += [f"{100 * n / total:6.1f}% {name}" for name, n in calling.most_common(top)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("path", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--under", default="", help="only stacks through this frame")
    parser.add_argument("--callers", default="", help="who calls the frames named this")
    args = parser.parse_args(argv)
    print(summary(args.path, top=args.top, under=args.under, callers=args.callers))


if __name__ == "__main__":
    main()
