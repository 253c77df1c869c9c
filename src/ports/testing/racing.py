"""Races for the contract suites: several threads released at once against one store."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar, cast

T = TypeVar("T")

BARRIER_TIMEOUT_S = 30
JOIN_TIMEOUT_S = 60


def race(racers: int, run: Callable[[int], T]) -> list[T]:
    """Call ``run(racer)`` for racers 0 … ``racers - 1``, each in its own thread, all released
    together by one barrier; return the results in racer order.

    Raises:
        BaseException: the first error a racer raised (re-raised here, in the caller's thread).
        AssertionError: a racer did not finish in time.
    """
    barrier = threading.Barrier(racers)
    results: list[T | None] = [None] * racers
    finished = [False] * racers
    errors: list[BaseException] = []

    def racer_thread(racer: int) -> None:
        try:
            barrier.wait(timeout=BARRIER_TIMEOUT_S)
            results[racer] = run(racer)
            finished[racer] = True
        except BaseException as exc:  # noqa: BLE001 - a thread's top level; re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=racer_thread, args=(n,)) for n in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=JOIN_TIMEOUT_S)
    if errors:
        raise errors[0]
    assert all(finished), "a racer did not finish"
    return cast(list[T], results)
