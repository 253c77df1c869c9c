"""A CPU-weighted stack sampler for a whole server process, every thread included (py-spy is
not available offline; cProfile sees only the thread it runs in, and the answer path spends
much of its CPU in the offload threads).

Every ``--interval`` seconds it reads each thread's CPU ticks (``/proc/self/task/<tid>/stat``)
and, for each thread whose ticks advanced, counts its current Python stack with that many
ticks as the weight. At exit (``clarion serve`` returns on SIGTERM) it writes the top
functions by self and by inclusive weight to ``OUT``::

    .venv/bin/python -m benchmarks.sampler OUT -m clarion serve ...
    .venv/bin/python -m benchmarks.replicas_bench --quick --profile /tmp/prof   # one per replica

Linux only. A sampling estimate: compare shares before and after a change, not ticks.
"""

from __future__ import annotations

import atexit
import collections
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


def _ticks(native_id: int) -> int:
    try:
        text = Path(f"/proc/self/task/{native_id}/stat").read_text()
    except OSError:
        return 0
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


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
        self.thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def _run(self) -> None:
        own = threading.get_ident()
        while True:
            time.sleep(self.interval)
            frames = sys._current_frames()
            for thread in threading.enumerate():
                ident, native = thread.ident, thread.native_id
                if ident is None or native is None or ident == own or ident not in frames:
                    continue
                ticks = _ticks(native)
                spent = ticks - self.last.get(native, ticks)
                self.last[native] = ticks
                if spent <= 0:
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
        lines = [f"{total} ticks sampled", "", "self:"]
        lines += [f"{100 * w / total:6.1f}% {name}" for name, w in own.most_common(TOP)]
        lines += ["", "inclusive:"]
        lines += [f"{100 * w / total:6.1f}% {name}" for name, w in inclusive.most_common(3 * TOP)]
        return "\n".join(lines) + "\n"


def _exit(_signal: int, _frame: object) -> None:
    raise SystemExit(0)


def main() -> None:
    out = Path(sys.argv[1])
    if sys.argv[2] != "-m":
        raise SystemExit("usage: python -m benchmarks.sampler OUT -m MODULE [ARGS...]")
    module = sys.argv[3]
    sampler = Sampler()
    atexit.register(lambda: out.write_text(sampler.report()))
    # uvicorn re-raises the SIGTERM it handled once it has shut down: exit normally on it, so
    # the report above is written.
    signal.signal(signal.SIGTERM, _exit)
    sys.argv = [module, *sys.argv[4:]]
    sampler.thread.start()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
