"""The node's side of a life: a Ray actor that starts the engine there, as the local run would.

The driver makes the runtime object (qgate/runtime/factory.py: the same command
building, arguments and environment as a local life) and hands it over; here it
is pointed at this node (it listens on the node's address, its log in a folder
of the node, the weights it serves emulated here when its side asks: qgate/cluster/node.py)
and started in its own process group, bound to the cores its life holds. A guard process
(qgate/cluster/guard.py) ends that group if this actor dies without stopping it.
Results cross back as plain data: an exception's class need not unpickle on the
driver, so a failure is returned as its message, log tail and exit status.

`LifeHost` is a plain class (unit-testable without Ray); qgate/cluster/life.py
makes it an actor with the life's resources.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from qgate.cluster import guard
from qgate.cluster.node import life_facts, serving_path
from qgate.errors import BadInput, QgateError, RuntimeFailure
from qgate.runtime import process
from qgate.runtime.server import ServerProcess
from qgate.runtime.vllm_server import VllmServer

__all__ = ["LifeHost", "node_address", "work_root"]

_WATCH_S = 0.2


def work_root() -> Path:
    """Where lives keep their logs on a node: $QGATE_RAY_WORKDIR, else a per-user temp folder."""
    if env := os.environ.get("QGATE_RAY_WORKDIR"):
        return Path(env)
    return Path(tempfile.gettempdir()) / f"qgate-ray-{os.getuid()}"


def node_address() -> str:
    """This node's address as Ray knows it (the driver reaches the server there)."""
    try:
        import ray

        util: Any = ray.util
        return str(util.get_node_ip_address())
    except Exception:  # outside a Ray worker (unit tests): this host's own name resolved
        return socket.gethostbyname(socket.gethostname())


def _failure(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, RuntimeFailure):
        message = exc.message.split(": ", 1)[1] if ": " in exc.message else exc.message
        return {"message": message, "tail": exc.log_tail, "returncode": exc.returncode}
    if isinstance(exc, BadInput):  # this node cannot run what the side asks: exit 2 there
        return {"message": exc.message, "tail": exc.details, "returncode": None, "bad": True}
    if isinstance(exc, QgateError):
        return {"message": exc.message, "tail": exc.details, "returncode": None}
    return {"message": f"{type(exc).__name__}: {exc}", "tail": [], "returncode": None}


class LifeHost:
    """One server life on this node: start, report, stream the log, watch, pause, stop;
    or only the engine's dry check of its command line (a preflight)."""

    def __init__(
        self,
        runtime: ServerProcess,
        label: str,
        emulate: tuple[dict[str, Any], str] | None = None,
        cores: int | None = None,
    ) -> None:
        self.runtime = runtime
        self.label = label
        self.emulate = emulate  # the side's weight emulation and stored dtype, made here
        if cores is not None and isinstance(runtime, VllmServer):
            runtime.cores_wanted = cores  # a CPU life: bound to the cores the life holds
        self.folder = work_root() / f"{label}-{os.getpid()}"
        self.driver_log = runtime.log_path
        runtime.run_dir = self.folder
        runtime.host = node_address()
        self._pgids = self.folder / "pgids"
        self._guard: subprocess.Popen[bytes] | None = None
        self._watching = threading.Event()
        self._known: set[int] = set()
        self._stop_asked = False

    def _failure(self, exc: BaseException) -> dict[str, Any]:
        return {**_failure(exc), "node_log": str(self.runtime.log_path)}

    def where(self) -> dict[str, Any]:
        """Which node and process this life runs in."""
        import ray

        ctx = ray.get_runtime_context()
        return {"node_id": ctx.get_node_id(), "ip": self.runtime.host, "pid": os.getpid()}

    def _record_groups(self) -> None:
        """Append each new process group of the runtime (a port retry spawns another)."""
        pid = self.runtime.pid
        if pid is not None and pid not in self._known:
            self._known.add(pid)
            with open(self._pgids, "a", encoding="utf-8") as f:
                f.write(f"{pid}\n")

    def _watch(self) -> None:
        while not self._watching.wait(_WATCH_S):
            self._record_groups()

    def start(self) -> dict[str, Any]:
        """Start and wait until ready: {'ok': base_url and effective config} or {'error': ...}."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self._pgids.touch()
        self._guard = subprocess.Popen(
            [sys.executable, guard.__file__, str(os.getpid()), str(self._pgids)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        threading.Thread(target=self._watch, daemon=True).start()
        try:
            self.runtime.model_path = serving_path(self.runtime.model_path, self.emulate)
            self.runtime.start()
            self._record_groups()
            if self._stop_asked:  # stopped while it was being spawned
                raise RuntimeFailure(self.runtime.role, "stopped during startup")
            self.runtime.wait_ready()
            self._record_groups()
        except BaseException as exc:
            self.runtime.stop()
            return {"error": self._failure(exc)}
        config = self.runtime.effective_config()
        facts = life_facts(self.runtime.model_path, self.runtime.log_path)
        return {
            "ok": {"base_url": self.runtime.base_url, "config": config.model_dump(), "facts": facts}
        }

    def dry_check(self) -> dict[str, Any] | None:
        """The engine's own check of the command line here, nothing started: None when it
        accepts it, else the failure (a dry check needs the engine and the platform of a node
        with the life's resources, which the driver may not have)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if not self.runtime.can_dry_check():
            return {"message": f"{type(self.runtime).__name__} has no dry check", "tail": []}
        try:
            self.runtime.dry_check()
        except Exception as exc:
            return self._failure(exc)
        return None

    def log_since(self, offset: int) -> tuple[str, int]:
        """Log text written after byte `offset` (whole lines), and the offset after it."""
        return process.read_lines_from(self.runtime.log_path, offset)

    def tail(self, n: int = 20) -> list[str]:
        return process.tail_lines(self.runtime.log_path, n)

    def check_alive(self, timeout_s: float) -> dict[str, Any] | None:
        """None while it serves; the failure otherwise (then it is stopped)."""
        try:
            self.runtime.check_alive(timeout_s)
        except RuntimeFailure as exc:
            return self._failure(exc)
        return None

    def pause(self, frozen: bool) -> None:
        """SIGSTOP (True) or SIGCONT (False) the server's group: the idle side of a perf block."""
        pid = self.runtime.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGSTOP if frozen else signal.SIGCONT)

    def stop(self) -> int | None:
        """Stop the server's group (SIGTERM, then SIGKILL), then the guard; the exit status."""
        self._stop_asked = True
        try:
            self.runtime.stop()
        finally:
            self._watching.set()
            if self._guard is not None:
                self._guard.kill()
                self._guard.wait()
        return self.runtime.returncode
