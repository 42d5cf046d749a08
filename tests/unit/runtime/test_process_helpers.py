from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qgate.core.http import root_url
from qgate.runtime.process import describe_status, group_alive, stop_group, tail_lines
from qgate.runtime.waiting import startup_progress


def test_tail_lines_returns_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert tail_lines(log, 3) == ["line 97", "line 98", "line 99"]
    assert tail_lines(tmp_path / "missing.log") == []
    assert tail_lines(None) == []


def test_tail_lines_survives_long_lines_and_bad_bytes(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_bytes(b"a" * 200_000 + b"\nbad \xff byte\nlast\n")
    assert tail_lines(log, 2) == ["bad \ufffd byte", "last"]


def test_describe_status() -> None:
    assert describe_status(1) == "exit status 1"
    assert describe_status(-signal.SIGKILL) == "killed by SIGKILL"
    assert describe_status(None) == "still running"


def test_progress_is_silent_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    with startup_progress("starting reference runtime") as tick:
        tick("note")
        tick()
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_root_url() -> None:
    assert root_url("http://h:1/v1") == "http://h:1"
    assert root_url("http://h:1/v1/") == "http://h:1"
    assert root_url("http://h:1") == "http://h:1"


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_frozen_group_is_stopped_inside_and_running_after(tmp_path: Path) -> None:
    import sys
    import time

    from qgate.runtime.process import frozen_group, spawn_group, stop_group

    proc = spawn_group([sys.executable, "-c", "import time; time.sleep(60)"], {}, tmp_path / "log")
    try:
        with frozen_group(proc.pid):
            time.sleep(0.2)
            assert _state(proc.pid) == "T"  # stopped: takes no CPU while the neighbour is measured
        time.sleep(0.2)
        assert _state(proc.pid) in ("S", "R")
        with frozen_group(proc.pid):  # a group stopped while frozen still goes away
            assert stop_group(proc, grace_s=5.0) is not None
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.poll() is not None


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()[0]


def test_a_group_of_zombies_is_gone_though_the_kernel_still_lists_it() -> None:
    """A member that has exited but is not collected (pid 1 of a container or Ray node that
    never reaps) is no live process: waiting for it only burns the stop's grace period."""
    leader = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while _state(leader.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.05)  # exited; not collected (no wait() yet): a zombie in its group
        assert _state(leader.pid) == "Z"
        os.killpg(leader.pid, 0)  # the kernel still lists the group...
        assert not group_alive(leader.pid)  # ...but nothing in it runs
    finally:
        leader.wait()


def test_a_running_group_is_alive_and_its_stop_does_not_wait_out_the_grace() -> None:
    leader = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    assert group_alive(leader.pid)
    start = time.monotonic()
    stop_group(leader, grace_s=20.0)
    assert not group_alive(leader.pid)
    assert time.monotonic() - start < 10  # SIGTERM ended it: no SIGKILL after 20 s
