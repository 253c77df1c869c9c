"""A CPU-weighted stack sampler for a whole server process, every thread included (py-spy is
not available offline; cProfile sees only the thread it runs in, and the answer path spends
much of its CPU in the offload threads).

Every few milliseconds it reads each thread's CPU clock (``pthread_getcpuclockid``) and
counts each thread's current Python stack with the CPU time it used since the last look as
the weight. At exit (``clarion serve`` returns on SIGTERM) it writes the top
functions by self and by inclusive weight to ``OUT``. SIGUSR1 restarts the count, SIGUSR2
freezes it (``replicas_bench --profile`` sends them around its answer window)::

    .venv/bin/python -m benchmarks.sampler OUT -m clarion serve ...
    .venv/bin/python -m benchmarks.replicas_bench --quick --profile /tmp/prof   # one per replica
    CLARION_BENCH_CPROFILE=1 .venv/bin/python -m benchmarks.replicas_bench --quick --profile /tmp/p

With ``CLARION_BENCH_CPROFILE=1`` it runs cProfile in every thread instead (deterministic);
``CLARION_BENCH_CALLERS=REGEX`` then also lists the callers of the functions it matches.

Linux only. A sampling estimate: compare shares before and after a change, not ticks.
"""

from __future__ import annotations

import atexit
import collections
import cProfile
import io
import os
import pstats
import runpy
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

INTERVAL_S = 0.004
TOP = 60
ROOT = str(Path(__file__).resolve().parents[1])


def _cpu_us(ident: int) -> int:
    """The thread's CPU time so far, in microseconds (0 when it is gone)."""
    try:
        return time.clock_gettime_ns(time.pthread_getcpuclockid(ident)) // 1000
    except (OSError, ProcessLookupError):
        return 0


def _where(frame: FrameType) -> str:
    code = frame.f_code
    name = code.co_filename.removeprefix(ROOT + "/")
    if "site-packages/" in name:
        name = name.split("site-packages/", 1)[1]
    return f"{name}:{code.co_qualname}"


class Sampler:
    """Weights per stack (outermost first), gathered by a daemon thread."""

    def __init__(self, interval: float = INTERVAL_S) -> None:
        self.interval = interval
        self.stacks: collections.Counter[tuple[str, ...]] = collections.Counter()
        self.last: dict[int, int] = {}
        self.counting = True
        self.thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def restart(self, _signal: int, _frame: object) -> None:
        """SIGUSR1: forget what was sampled so far (start-up) and count from now."""
        self.stacks.clear()
        self.counting = True

    def freeze(self, _signal: int, _frame: object) -> None:
        """SIGUSR2: stop counting (the window of interest is over)."""
        self.counting = False

    def _run(self) -> None:
        own = threading.get_ident()
        while True:
            time.sleep(self.interval)
            frames = sys._current_frames()
            for thread in threading.enumerate():
                ident = thread.ident
                if ident is None or ident == own or ident not in frames:
                    continue
                used = _cpu_us(ident)
                spent = used - self.last.get(ident, used)
                self.last[ident] = used
                if spent <= 0 or not self.counting:
                    continue
                stack = []
                frame: FrameType | None = frames[ident]
                while frame is not None:
                    stack.append(_where(frame))
                    frame = frame.f_back
                self.stacks[tuple(reversed(stack))] += spent

    def report(self) -> str:
        total = sum(self.stacks.values()) or 1
        own: collections.Counter[str] = collections.Counter()
        inclusive: collections.Counter[str] = collections.Counter()
        for stack, weight in self.stacks.items():
            own[stack[-1]] += weight
            for name in set(stack):
                inclusive[name] += weight
        lines = [f"{total / 1e6:.2f} s of CPU sampled", "", "self:"]
        lines += [f"{100 * w / total:6.1f}% {name}" for name, w in own.most_common(TOP)]
        lines += ["", "inclusive:"]
        lines += [f"{100 * w / total:6.1f}% {name}" for name, w in inclusive.most_common(3 * TOP)]
        return "\n".join(lines) + "\n"


class _Snapshot:
    """What :class:`pstats.Stats` reads from a profiler, without it disabling the profiler
    (``create_stats`` would, and only in the calling thread)."""

    def __init__(self, profile: cProfile.Profile) -> None:
        profile.snapshot_stats()
        self.stats = profile.stats

    def create_stats(self) -> None:
        """Already snapshotted."""


class Deterministic:
    """``--cprofile``: one :class:`cProfile.Profile` per thread (each enabled from inside its
    thread, as a profiler only sees the thread that enabled it), merged in the report. Exact
    call counts; the times are inflated by the profiler itself, so read the shares."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []
        self.frozen = ""
        self._enable()
        threading.setprofile(self._first_call)

    def _enable(self) -> None:
        profile = cProfile.Profile(time.thread_time)
        self.profiles.append(profile)
        profile.enable()

    def _first_call(self, *_args: object) -> None:
        sys.setprofile(None)
        self._enable()

    def restart(self, _signal: int, _frame: object) -> None:
        for profile in list(self.profiles):
            profile.clear()
        self.frozen = ""

    def freeze(self, _signal: int, _frame: object) -> None:
        self.frozen = self._text()

    def _text(self) -> str:
        # A thread that ran nothing since the restart has no stats, and pstats refuses an
        # empty source (TypeError): only the others are merged.
        snapshots = [snapshot for p in list(self.profiles) if (snapshot := _Snapshot(p)).stats]
        if not snapshots:
            return "nothing profiled\n"
        stats = pstats.Stats(*snapshots)  # type: ignore[arg-type]
        out = io.StringIO()
        stats.stream = out  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(TOP)
        stats.sort_stats("cumulative").print_stats(3 * TOP)
        # CLARION_BENCH_CALLERS=REGEX: who calls the functions it matches (call counts).
        if callers := os.environ.get("CLARION_BENCH_CALLERS"):
            stats.print_callers(callers)
        return out.getvalue()

    def report(self) -> str:
        return self.frozen or self._text()


def _exit(_signal: int, _frame: object) -> None:
    raise SystemExit(0)


def main() -> None:
    out = Path(sys.argv[1])
    if sys.argv[2] != "-m":
        raise SystemExit("usage: python -m benchmarks.sampler OUT -m MODULE [ARGS...]")
    module = sys.argv[3]
    sampler: Sampler | Deterministic
    if os.environ.get("CLARION_BENCH_CPROFILE"):
        sampler = Deterministic()
    else:
        sampler = Sampler()
        sampler.thread.start()
    atexit.register(lambda: out.write_text(sampler.report()))
    # uvicorn re-raises the SIGTERM it handled once it has shut down: exit normally on it, so
    # the report above is written.
    signal.signal(signal.SIGTERM, _exit)
    signal.signal(signal.SIGUSR1, sampler.restart)
    signal.signal(signal.SIGUSR2, sampler.freeze)
    sys.argv = [module, *sys.argv[4:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
