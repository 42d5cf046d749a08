"""Lives started together on the cluster: a wave runs its jobs at once, each in a thread.

Each job holds one life (its HTTP suites run from the driver, so a thread per
life is enough). A wave ends when all its jobs have; a Ctrl-C or an error in
the driver stops every life of the wave before it propagates (each job's own
`with life:` then unwinds). `ddmin_on` runs attribution's rounds as waves:
up to `width` sub-candidates of one round at once (qgate/core/ddmin.py says
what that costs in lives).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Protocol, TypeVar

from qgate.core.ddmin import Key, Outcome, Search, search_rounds

__all__ = ["Stoppable", "Wave", "ddmin_on", "in_waves"]

T = TypeVar("T")


class Stoppable(Protocol):
    def stop(self) -> None: ...


class Wave:
    """Jobs run at once; the lives they open are registered here so that all can be stopped."""

    def __init__(self) -> None:
        self._lives: list[Stoppable] = []
        self._lock = threading.Lock()

    def hold(self, life: T) -> T:
        """Register a life (anything with stop()) of a job of this wave; returns it."""
        with self._lock:
            self._lives.append(life)  # type: ignore[arg-type]
        return life

    def stop_all(self) -> None:
        with self._lock:
            lives = list(self._lives)
        for life in lives:
            life.stop()

    def run(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """Every job at once; their results in order, or the first error once all ended."""
        if len(jobs) == 1:
            return [jobs[0]()]
        pool = ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="qgate-life")
        try:
            futures = [pool.submit(job) for job in jobs]
            while wait(futures, timeout=0.5).not_done:  # short waits: a Ctrl-C lands at once
                pass
            errors = [f.exception() for f in futures]
        except BaseException:  # Ctrl-C while waiting: end every life, then the threads
            self.stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        first = next((e for e in errors if e is not None), None)
        if first is not None:
            raise first
        return [f.result() for f in futures]


def in_waves(
    jobs: Sequence[Callable[[], T]], width: int, stop_all: Callable[[], None] | None = None
) -> list[T]:
    """The jobs `width` at a time, in order; their results in order. A Ctrl-C or an error
    calls `stop_all` (every life the jobs opened) before it propagates."""
    out: list[T] = []
    for start in range(0, len(jobs), max(1, width)):
        wave = Wave()
        if stop_all is not None:
            wave.hold(_Call(stop_all))
        out += wave.run(list(jobs[start : start + max(1, width)]))
    return out


class _Call:
    def __init__(self, fn: Callable[[], None]) -> None:
        self.stop = fn


def ddmin_on(
    names: Sequence[str],
    trial: Callable[[Key, Wave], Outcome],
    budget: int,
    width: int,
    on_wave: Callable[[list[Key]], None] | None = None,
) -> Search:
    """ddmin with each round's sets run `width` at a time, each wave's trials at once.

    `trial(key, wave)` runs one sub-candidate's life (registering it with `wave.hold`) and
    returns its outcome.
    """

    def test_many(keys: list[Key]) -> list[Outcome]:
        if on_wave is not None:
            on_wave(keys)
        wave = Wave()
        return wave.run([lambda k=k: trial(k, wave) for k in keys])  # type: ignore[misc]

    return search_rounds(names, test_many, budget, width)
