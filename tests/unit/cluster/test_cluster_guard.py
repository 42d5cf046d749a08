"""The guard ends a server's process group once the actor that started it is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from qgate.cluster import guard
from qgate.runtime.process import group_alive


def _wait(cond, timeout: float = 15.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return False


def test_a_killed_actor_takes_its_server_group_with_it(tmp_path: Path) -> None:
    actor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    server = subprocess.Popen(  # a leader with a child, in a session of its own, as spawn_group
        [
            sys.executable,
            "-c",
            "import subprocess,sys,time; subprocess.Popen([sys.executable, "
            "'-c', 'import time; time.sleep(60)']); time.sleep(60)",
        ],
        start_new_session=True,
    )
    groups = tmp_path / "pgids"
    groups.write_text(f"{server.pid}\n")
    watcher = subprocess.Popen(
        [sys.executable, guard.__file__, str(actor.pid), str(groups)], start_new_session=True
    )
    try:
        time.sleep(2 * guard.POLL_S)
        assert group_alive(server.pid) and watcher.poll() is None  # the actor lives: no action
        actor.kill()
        actor.wait()
        # (the leader is this test's child: reaped here, as init reaps it on a node)
        assert _wait(lambda: server.poll() is not None and not group_alive(server.pid)), (
            "the server group outlived its actor"
        )
        assert watcher.wait(timeout=15) == 0
    finally:
        for p in (actor, watcher):
            p.kill()
        server.wait(timeout=5)
        if group_alive(server.pid):
            os.killpg(server.pid, 9)
