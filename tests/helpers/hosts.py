"""A Ray cluster of hosts that share nothing, on one machine (root only): namespaces.

The head (the driver's node: no CPUs, so no life lands there) runs in this machine's
network namespace at the bridge's address. Each worker node runs in namespaces of its
own: network (its own address on a bridge this module creates, no route anywhere
else), UTS (its own hostname), PID (its processes end with it) and mount, with private
tmpfs over /tmp, /dev/shm and qgate's cache folder, so nothing a life writes reaches
the driver's filesystem, nor the other node's. The model checkpoint is bind-mounted
read-only at the same path inside each node, as real clusters share a read-only model
volume. Everything is removed on close, on every path (`with HostsCluster(...)`).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["HostNode", "HostsCluster", "namespaces_problem"]

RAY = str(Path(sys.executable).with_name("ray"))
WAIT_S = 90.0


def namespaces_problem() -> str | None:
    """Why namespaced hosts cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network and mount namespaces need root"
    for tool in ("ip", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    if not Path(RAY).is_file():
        return f"no `ray` beside {sys.executable}"
    return None


def _run(*cmd: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")


def _free_subnet() -> int:
    """A /24 of 198.18.0.0/15 (the benchmarking range) that no route of this machine uses."""
    used = subprocess.run(["ip", "route"], capture_output=True, text=True, check=False).stdout
    for _ in range(200):
        third = random.randrange(1, 255)
        if f"198.18.{third}." not in used:
            return third
    raise RuntimeError("no free /24 in 198.18.0.0/16")


@dataclass
class HostNode:
    """One worker node: its namespaces' name, address, hostname and Ray resources."""

    name: str
    ip: str
    hostname: str
    resources: dict[str, float]
    cpus: int
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def init_pid(self) -> int | None:
        """The root-namespace pid of the node's first process (pid 1 in its namespace)."""
        if self.proc is None:
            return None
        kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        with contextlib.suppress(OSError, ValueError):
            return int(kids.read_text().split()[0])
        return None

    @property
    def root(self) -> Path:
        """The node's filesystem as seen from here (its private /tmp and cache)."""
        pid = self.init_pid
        assert pid is not None, f"{self.name} is not running"
        return Path(f"/proc/{pid}/root")

    def pid_namespace(self) -> str | None:
        pid = self.init_pid
        with contextlib.suppress(OSError):
            return os.readlink(f"/proc/{pid}/ns/pid") if pid else None
        return None

    def processes(self) -> list[tuple[int, str]]:
        """Every live process of the node: (root-namespace pid, command line)."""
        ns = self.pid_namespace()
        out: list[tuple[int, str]] = []
        if ns is None:
            return out
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if os.readlink(entry / "ns" / "pid") != ns:
                    continue
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out.append((int(entry.name), cmd.strip()))
        return out


@dataclass
class HostsCluster:
    """A head in this namespace and `nodes` worker nodes that share nothing with it.

    `private` are the folders each node gets its own empty tmpfs over (qgate's cache);
    `shared_ro` the folders bind-mounted read-only at the same path (the checkpoint).
    """

    nodes: list[HostNode]
    private: list[Path]
    shared_ro: list[Path]
    env: dict[str, str] = field(default_factory=dict)
    tag: str = field(default_factory=lambda: f"qg{os.getpid() % 100000}")
    address: str = ""
    head_ip: str = ""
    _head: subprocess.Popen[bytes] | None = None
    _temp: Path | None = None
    _links: list[str] = field(default_factory=list)
    _netns: list[str] = field(default_factory=list)

    @classmethod
    def two_nodes(
        cls, private: list[Path], shared_ro: list[Path], env: dict[str, str], cpus: int
    ) -> HostsCluster:
        """'ref' and 'cand' nodes of `cpus` CPUs each, every core of this machine's share."""
        third = _free_subnet()
        nodes = [
            HostNode(f"n{i}", f"198.18.{third}.{10 + i}", f"qgate-{pool}-host", {pool: 1}, cpus)
            for i, pool in enumerate(("ref", "cand"), 1)
        ]
        cluster = cls(nodes=nodes, private=private, shared_ro=shared_ro, env=env)
        cluster.head_ip = f"198.18.{third}.1"
        return cluster

    def __enter__(self) -> HostsCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _bridge(self) -> str:
        bridge = f"{self.tag}b"
        _run("ip", "link", "add", bridge, "type", "bridge")
        self._links.append(bridge)
        _run("ip", "addr", "add", f"{self.head_ip}/24", "dev", bridge)
        _run("ip", "link", "set", bridge, "up")
        return bridge

    def _namespace(self, node: HostNode, bridge: str) -> None:
        ns, outer, inner = (
            f"{self.tag}{node.name}",
            f"{self.tag}{node.name}o",
            f"{self.tag}{node.name}i",
        )
        _run("ip", "netns", "add", ns)
        self._netns.append(ns)
        _run("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
        self._links.append(outer)
        _run("ip", "link", "set", inner, "netns", ns)
        _run("ip", "link", "set", outer, "master", bridge, "up")
        _run("ip", "-n", ns, "addr", "add", f"{node.ip}/24", "dev", inner)
        _run("ip", "-n", ns, "link", "set", inner, "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")

    def _node_script(self, node: HostNode) -> str:
        lines = ["set -e", f"hostname {node.hostname}"]
        # The shared folders are held under /mnt (a tmpfs of this mount namespace only) before
        # /tmp, /dev/shm and the private folders are covered: a shared folder may lie under
        # one of them (a checkout and its venv under /tmp, the checkpoint in the cache).
        lines.append("mount -t tmpfs qgate-hold /mnt")
        for i, path in enumerate(self.shared_ro):
            lines += [f"mkdir -p /mnt/ro{i}", f"mount --bind '{path}' /mnt/ro{i}"]
        lines += ["mount -t tmpfs qgate-tmp /tmp", "mount -t tmpfs qgate-shm /dev/shm"]
        lines += [f"mkdir -p '{p}' && mount -t tmpfs qgate-private '{p}'" for p in self.private]
        for i, path in enumerate(self.shared_ro):
            lines += [
                f"mkdir -p '{path}'",
                f"mount --bind /mnt/ro{i} '{path}'",
                f"mount -o remount,bind,ro '{path}'",
                f"umount /mnt/ro{i}",
            ]
        lines.append("umount /mnt")
        ray = [
            RAY,
            "start",
            "--block",
            "--disable-usage-stats",
            f"--address={self.address}",
            f"--node-ip-address={node.ip}",
            f"--num-cpus={node.cpus}",
            f"--resources={json.dumps(node.resources)}",
            "--object-store-memory=80000000",
        ]
        lines.append("exec " + " ".join(f"'{w}'" for w in ray))
        return "\n".join(lines)

    def start(self) -> None:
        self._temp = Path(tempfile.mkdtemp(prefix=f"{self.tag}-"))
        bridge = self._bridge()
        for node in self.nodes:
            self._namespace(node, bridge)
        port = random.randrange(20000, 30000)
        self.address = f"{self.head_ip}:{port}"
        head = [
            RAY,
            "start",
            "--head",
            "--block",
            "--disable-usage-stats",
            "--include-dashboard=false",
            f"--node-ip-address={self.head_ip}",
            f"--port={port}",
            "--num-cpus=0",
            f"--temp-dir={self._temp / 'ray'}",
            "--object-store-memory=80000000",
            f"--ray-client-server-port={port + 1}",
        ]
        env = {**os.environ, **self.env}
        with open(self._temp / "head.log", "wb") as log:
            self._head = subprocess.Popen(
                head, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        for node in self.nodes:
            node.log = self._temp / f"{node.name}.log"
            ns = f"{self.tag}{node.name}"
            cmd = ["ip", "netns", "exec", ns, "unshare", "--mount", "--uts", "--pid", "--fork"]
            cmd += ["--mount-proc", "--propagation", "private", "--kill-child=SIGKILL"]
            cmd += ["sh", "-c", self._node_script(node)]
            with open(node.log, "wb") as log:
                node.proc = subprocess.Popen(
                    cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
                )
        self._wait_nodes(1 + len(self.nodes))

    def _wait_nodes(self, count: int) -> None:
        """Until `count` nodes are alive (this process joins the cluster as its driver)."""
        import ray

        deadline = time.monotonic() + WAIT_S
        procs = [(self._head, "head"), *((n.proc, n.name) for n in self.nodes)]
        while time.monotonic() < deadline:
            for proc, what in procs:
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(f"the {what} node exited: {self.logs()}")
            head_up = "Ray runtime started" in self.logs()
            if head_up and not ray.is_initialized():
                with contextlib.suppress(Exception):
                    ray.init(address=self.address, logging_level="ERROR", log_to_driver=False)
            if ray.is_initialized() and sum(1 for n in ray.nodes() if n["Alive"]) >= count:
                return
            time.sleep(0.5)
        raise RuntimeError(f"{count} Ray nodes not alive within {WAIT_S:.0f} s: {self.logs()}")

    def logs(self) -> str:
        if self._temp is None:
            return ""
        parts = []
        for path in sorted(self._temp.glob("*.log")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}")
        return "\n".join(parts)

    def close(self) -> None:
        """Every node's processes, the head's, the namespaces, links and folders: gone."""
        if "ray" in sys.modules and sys.modules["ray"].is_initialized():
            sys.modules["ray"].shutdown()
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                init = node.init_pid
                if init is not None:  # pid 1 of the node: the kernel ends all of its namespace
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(init, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.proc.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    node.proc.wait(30)
        if self._head is not None:  # its group: `ray start`, the GCS, raylet and agents
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._head.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._head.wait(10)
        for ns in self._netns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        for link in self._links:
            subprocess.run(["ip", "link", "del", link], capture_output=True, check=False)
        self._netns.clear()
        self._links.clear()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
