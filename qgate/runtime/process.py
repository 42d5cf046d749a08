"""Server processes in their own process group, and the guarantee that none outlives qgate.

Every group qgate starts is registered here. An atexit hook kills whatever
is still registered, and a SIGTERM handler turns a polite kill of qgate into
KeyboardInterrupt so that the same try/finally paths that handle Ctrl-C
stop the servers.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType

_live_groups: set[int] = set()
_lock = threading.Lock()
_hooks_installed = False


def _kill_all_registered() -> None:
    with _lock:
        groups = list(_live_groups)
        _live_groups.clear()
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def _sigterm_to_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def install_cleanup_hooks() -> None:
    """Register the atexit killer once; convert SIGTERM to KeyboardInterrupt if nobody else did.

    The signal handler is only installed from the main thread and only over
    the default disposition, so a caller's own handler is left alone.
    """
    global _hooks_installed
    with _lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(_kill_all_registered)
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError):
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
                signal.signal(signal.SIGTERM, _sigterm_to_interrupt)


def spawn_group(
    argv: Sequence[str], env: Mapping[str, str], log_path: Path, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start `argv` as the leader of a new session, stdout+stderr appended to `log_path`."""
    install_cleanup_hooks()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    with _lock:
        # With start_new_session the child's pid is its process group id.
        _live_groups.add(proc.pid)
    return proc


def group_alive(pgid: int) -> bool:
    """True while any process of the group exists and is not a zombie.

    A zombie has ended: it only waits for its parent to collect its status. Where pid 1 does
    not collect orphans (a container or Ray node whose first process is `ray start --block`),
    a server's exited workers stay zombies in its group for good, and counting them as alive
    made every stop wait its whole grace period (two Ray lives: 60 s in all).
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _live_member(pgid)


def _live_member(pgid: int, proc: Path = Path("/proc")) -> bool:
    """Whether /proc shows a process of group `pgid` that is not a zombie (True without /proc:
    then any member counts)."""
    if not proc.is_dir():
        return True
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def _wait_group_gone(pgid: int, deadline: float) -> bool:
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.1)
    return not group_alive(pgid)


@contextlib.contextmanager
def frozen_group(pgid: int) -> Iterator[None]:
    """The process group stopped (SIGSTOP) inside the block and continued (SIGCONT) after,
    so that an idle server takes no CPU while its neighbour is measured."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGCONT)


def stop_group(proc: subprocess.Popen[bytes], grace_s: float) -> int | None:
    """SIGTERM the group, SIGKILL it after `grace_s`; return the leader's exit status.

    A second Ctrl-C (or any exception) while waiting goes straight to SIGKILL
    of the whole group before it propagates, so nothing is left behind.
    """
    pgid = proc.pid
    try:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
            os.killpg(pgid, signal.SIGCONT)  # a paused group (freeze_group) handles it only then
        deadline = time.monotonic() + grace_s
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        # Workers may outlive the leader briefly; give them the rest of the grace.
        if not _wait_group_gone(pgid, deadline):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
    except BaseException:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        raise
    finally:
        # Reap the leader even after SIGKILL, so it is not left as a zombie.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        _wait_group_gone(pgid, time.monotonic() + 10)
        with _lock:
            _live_groups.discard(pgid)
    return proc.returncode


def tail_lines(path: Path | None, n: int = 20) -> list[str]:
    """The last `n` lines of a log file (empty when it does not exist)."""
    if path is None or not path.exists():
        return []
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        # Long config lines make 64 KiB a sensible window for 20 lines.
        f.seek(max(0, size - 65536))
        data = f.read()
    lines = data.decode("utf-8", errors="replace").splitlines()
    return [line.rstrip() for line in lines[-n:]]


def read_lines_from(path: Path, offset: int) -> tuple[str, int]:
    """Whole lines written to `path` after byte `offset`, and the offset after them."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return "", offset
    # Only up to the last newline, so a line is never seen half-written.
    end = data.rfind(b"\n") + 1
    return data[:end].decode("utf-8", errors="replace"), offset + end


def describe_status(returncode: int | None) -> str:
    """`exit status 1` or `killed by SIGKILL` for people."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"
