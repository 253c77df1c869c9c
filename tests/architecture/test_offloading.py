"""Blocking work reaches a worker thread through the one Runner (issue #32).

``clarion.app.usecases.runner.Runner`` is the :class:`clarion.ports.threads.Offload` every
blocking call goes through, so store calls share one worker limiter (Slack's store calls used
to skip it). These tests find every direct use of a thread-offloading API in ``src`` and fail
on any the list below does not name with its reason.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

OFFLOADING = re.compile(
    r"to_thread\.run_sync\(|run_in_executor\(|asyncio\.to_thread\(|\bThreadPoolExecutor\("
)

# path under src → how many direct calls it makes, and why they do not go through the Runner.
ALLOWED: dict[str, tuple[int, str]] = {
    "app/usecases/runner.py": (2, "the Runner itself: store calls and outbound requests"),
    "adapters/rest/app.py": (
        1,
        "/healthz checks the database on a limiter of its own, so full workers cannot fail it",
    ),
    "app/root/wings/maintenance.py": (
        3,
        "start-up's schema upgrade and lease acquisition run before anything is served; the "
        "lease renews on its own connection outside the pool, so it never queues behind store "
        "calls for a thread",
    ),
    "app/root/demo.py": (1, "the demo CLI waits for its own receiver thread's event"),
}


def _calls() -> Counter[str]:
    found: Counter[str] = Counter()
    for path in sorted(SRC.rglob("*.py")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if OFFLOADING.search(line) and not line.lstrip().startswith("#"):
                found[path.relative_to(SRC).as_posix()] += 1
    return found


def test_blocking_calls_are_offloaded_only_through_the_runner() -> None:
    calls = _calls()
    unexpected = {
        path: count for path, count in calls.items() if count > ALLOWED.get(path, (0, ""))[0]
    }
    assert not unexpected, (
        f"offload through the Runner (clarion.ports.threads.Offload), not directly: {unexpected}"
    )


def test_every_allowed_exception_is_still_there() -> None:
    """An exception that went away leaves the list, so the list stays the truth."""
    calls = _calls()
    stale = {path: allowed for path, (allowed, _) in ALLOWED.items() if calls[path] != allowed}
    assert not stale, f"update ALLOWED in {Path(__file__).name}: {stale}"
