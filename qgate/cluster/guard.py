"""The guard beside a server started by a Ray actor: when the actor dies, the server dies.

A killed actor (`ray.kill`, its driver gone, its node's raylet gone) runs no
cleanup of its own, and the server runs in a session of its own, so nothing
else would stop it. Run as `python -m qgate.cluster.guard ACTOR_PID PGID_FILE`:
every poll it reads the process groups the actor started (one per line, the
actor appends a group when it spawns one) and, once the actor is gone, sends
them SIGTERM, then SIGKILL after a grace period, and exits. The actor ends the
guard itself after a clean stop. Standard library only: it starts in a blink.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

__all__ = ["POLL_S", "guard"]

POLL_S = 0.3
GRACE_S = 5.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (an exited actor not yet reaped by the raylet) is gone for our purpose.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _groups(path: Path) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(x) for x in path.read_text().split() if x.strip().isdigit()]
    return []


def _signal_all(groups: list[int], sig: signal.Signals) -> bool:
    """Send `sig` to each group; True while any of them still exists."""
    left = False
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
            left = True
    return left


def guard(actor_pid: int, pgid_file: Path) -> None:
    """Wait for the actor to die, then end every group it started."""
    while _alive(actor_pid):
        time.sleep(POLL_S)
    groups = _groups(pgid_file)
    _signal_all(groups, signal.SIGTERM)
    _signal_all(groups, signal.SIGCONT)  # a paused group handles SIGTERM only then
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline and _signal_all(groups, signal.SIGCONT):
        time.sleep(POLL_S)
    _signal_all(groups, signal.SIGKILL)


if __name__ == "__main__":
    guard(int(sys.argv[1]), Path(sys.argv[2]))
