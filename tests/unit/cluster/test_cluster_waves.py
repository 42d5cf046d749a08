"""A wave runs its jobs at once; Ctrl-C or an error stops every life it holds."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from qgate.cluster.waves import Wave, ddmin_on
from qgate.core.ddmin import Key, Outcome


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Python's KeyboardInterrupt on SIGINT for the test, whatever the suite inherited: a
    suite started in the background (`make test &`, nohup) has SIGINT ignored, and the
    interrupt these tests send would never arrive."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


class _Life:
    def __init__(self) -> None:
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()


def test_a_waves_jobs_run_at_once_and_return_in_order() -> None:
    barrier = threading.Barrier(3, timeout=10)  # only passes when all three run together

    def job(i: int) -> int:
        barrier.wait()
        return i * 10

    assert Wave().run([lambda i=i: job(i) for i in range(3)]) == [0, 10, 20]  # type: ignore[misc]


def test_an_error_in_one_job_is_raised_once_every_job_has_ended() -> None:
    ended: list[int] = []

    def ok() -> int:
        time.sleep(0.3)
        ended.append(1)
        return 1

    def bad() -> int:
        raise RuntimeError("life failed")

    with pytest.raises(RuntimeError, match="life failed"):
        Wave().run([ok, bad])
    assert ended == [1]


def test_ctrl_c_while_waiting_stops_every_life_of_the_wave(ctrl_c: None) -> None:
    wave = Wave()
    lives = [wave.hold(_Life()), wave.hold(_Life())]

    def job(life: _Life) -> None:
        life.stopped.wait(10)  # a life runs until it is stopped

    def interrupt() -> None:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        wave.run([lambda life=life: job(life) for life in lives])  # type: ignore[misc]
    assert all(life.stopped.is_set() for life in lives)
    assert time.monotonic() - started < 5


def test_attribution_rounds_run_as_waves_of_at_most_width_trials() -> None:
    waves: list[list[Key]] = []
    running = 0
    most = 0
    lock = threading.Lock()

    def trial(key: Key, wave: Wave) -> Outcome:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.2)
        with lock:
            running -= 1
        return "FAIL" if "b" in key and "c" in key else "PASS"

    found = ddmin_on(list("abcd"), trial, budget=20, width=2, on_wave=waves.append)
    assert found.failing == ("b", "c") and found.complete
    assert all(len(w) <= 2 for w in waves) and most == 2
    assert waves[0] == [("a", "b"), ("c", "d")]  # the two halves at once


def test_jobs_in_waves_of_width_run_each_wave_together_and_keep_their_order() -> None:
    from qgate.cluster.waves import in_waves

    running = 0
    most = 0
    lock = threading.Lock()

    def job(i: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.2)
        with lock:
            running -= 1
        return i

    assert in_waves([lambda i=i: job(i) for i in range(5)], 2) == [0, 1, 2, 3, 4]  # type: ignore[misc]
    assert most == 2
    most = 0
    assert in_waves([lambda i=i: job(i) for i in range(3)], 1) == [0, 1, 2]  # type: ignore[misc]
    assert most == 1  # width 1: one at a time, in this thread


def test_a_ctrl_c_during_a_wave_stops_every_life_the_executor_made(ctrl_c: None) -> None:
    from qgate.cluster.waves import in_waves

    stopped = threading.Event()

    def job() -> None:
        stopped.wait(10)

    def interrupt() -> None:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt).start()
    with pytest.raises(KeyboardInterrupt):
        in_waves([job, job], 2, stopped.set)
    assert stopped.is_set()
