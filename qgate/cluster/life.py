"""The driver's side of a life on a Ray node: a runtime like any other.

`RayLife` wraps the runtime the local run would start (qgate/runtime/factory.py)
and runs it in a `LifeHost` actor (qgate/cluster/host.py) placed on a node with
the life's resources (pinned to a node when the wave's assignment names one).
The suites talk to the server over HTTP from here, at the node's address; the
server's log is copied back, as it grows, to the path the local run would have
written (so failures quote it as usual). Stopping asks the actor to stop the
server's process group, then kills the actor; a Ctrl-C on the way does the same.
A dry preflight (the engine's own check of the command line) runs in an actor on
a node with the life's resources too: the driver may have no engine and no
accelerator.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from qgate.cluster.host import LifeHost
from qgate.cluster.placement import LifeNeeds, NodeInfo
from qgate.cluster.ray_api import import_ray
from qgate.core.records import Record, Role
from qgate.core.serving import EffectiveConfig, Lifecycle, MetricNames
from qgate.errors import BadInput, RuntimeFailure
from qgate.runtime.server import ServerProcess
from qgate.runtime.vllm_server import DRY_CHECK_TIMEOUT_S

__all__ = ["LifePlacement", "RayLife"]

log = logging.getLogger("qgate")

_LOG_POLL_S = 1.0
# Beyond the engine's own start-up timeout: how long an actor may wait for a node with room.
PLACEMENT_TIMEOUT_S = 300.0
_CALL_TIMEOUT_S = 60.0
# A dry check: placed (PLACEMENT_TIMEOUT_S), then the engine's own parser and config check.
_DRY_CHECK_WAIT_S = PLACEMENT_TIMEOUT_S + DRY_CHECK_TIMEOUT_S + _CALL_TIMEOUT_S


class LifePlacement(Record):
    """Where one life ran: its node and what it held there (the report's cluster context)."""

    side: str = Field(description="'reference', the candidate's name, or an attribution trial.")
    node_id: str = Field(description="Ray node id the life's actor ran on.")
    ip: str = Field(description="The node's address; the server listened there.")
    needs: LifeNeeds = Field(description="The resources the life held on that node.")
    facts: dict[str, Any] = Field(
        default_factory=dict,
        description="What its node said about the life (hostname, weights served, log there).",
    )


class RayLife(Lifecycle):
    """One server life in a Ray actor; `with life:` starts it on its node and stops it."""

    starts_process = True

    def __init__(
        self,
        local: ServerProcess,
        needs: LifeNeeds,
        side: str,
        node: NodeInfo | None = None,
        emulate: tuple[dict[str, Any], str] | None = None,
        cores: int | None = None,
    ) -> None:
        self.local = local
        self.emulate = emulate  # its weights emulated on its node (setting, stored dtype)
        self.cores = cores  # a CPU life: the cores its server is bound to, as many as it holds
        self.role: Role = local.role
        self.needs = needs
        self.side = side
        self.node = node
        self.metrics: MetricNames | None = type(local).metrics
        self.kind = type(local).kind
        self.placement: LifePlacement | None = None
        self.round = 0  # the perf round it serves (perf.rounds; set by qgate/cluster/lives.py)
        self._actor: Any = None
        self._ready: Any = None
        self._base_url: str | None = None
        self._effective: EffectiveConfig | None = None
        self._offset = 0
        self._pump_stop = threading.Event()
        self._pump: threading.Thread | None = None
        self._pull_lock = threading.Lock()
        self._stopped = False

    @property
    def served_model(self) -> str:
        return self.local.served_model

    @property
    def log_path(self) -> Path:
        """The driver's copy of the server's log (where a local life would write it)."""
        return self.local.log_path

    @property
    def base_url(self) -> str:
        if self._base_url is None:
            raise RuntimeFailure(self.role, "not started")
        return self._base_url

    def _options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {
            "num_cpus": self.needs.num_cpus,
            "num_gpus": self.needs.num_gpus,
            "max_concurrency": 4,  # start() blocks; log, health and stop calls run beside it
        }
        if self.needs.resources:
            opts["resources"] = dict(self.needs.resources)
        if self.node is not None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                node_id=self.node.node_id, soft=False
            )
        else:  # lives at once on distinct nodes where the cluster has them
            opts["scheduling_strategy"] = "SPREAD"
        return opts

    def _spawn(self, what: str) -> Any:
        """A LifeHost actor for this life, placed on a node with its resources."""
        ray = import_ray()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        where = f"node {self.node.node_id[:8]} ({self.node.ip})" if self.node else "any node"
        self._note(f"placing the {self.side} {what} on {where}, holding {self.needs.as_dict()}")
        actor_class = ray.remote(LifeHost)
        return actor_class.options(**self._options()).remote(
            self.local, self.side, self.emulate, self.cores
        )

    def start(self) -> None:
        """Place the actor and ask it to start the server; returns at once (see wait_ready)."""
        if self._actor is not None:
            raise RuntimeFailure(self.role, "already started")
        self._actor = self._spawn("life")
        self._ready = self._actor.start.remote()
        self._pump = threading.Thread(target=self._pump_log, daemon=True)
        self._pump.start()

    def can_dry_check(self) -> bool:
        """Whether the engine's own parser can check the command line (vLLM's launchers)."""
        return self.local.can_dry_check()

    def dry_check(self) -> None:
        """The engine's check of the command line on a node with this life's resources (its
        engine, its platform: the driver may have neither), nothing started; the node's
        output is copied to the driver's log. RuntimeFailure with the engine's refusal."""
        ray = import_ray()
        actor = self._spawn("preflight (the engine's dry check)")
        try:
            answer = ray.get(actor.dry_check.remote(), timeout=_DRY_CHECK_WAIT_S)
            where = ray.get(actor.where.remote(), timeout=_CALL_TIMEOUT_S)
            text, _ = ray.get(actor.log_since.remote(0), timeout=_CALL_TIMEOUT_S)
        except (ray.exceptions.RayError, TimeoutError) as exc:
            raise RuntimeFailure(
                self.role, f"preflight: its Ray actor failed or did not answer: {exc}"
            ) from exc
        finally:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(text)
        self._note(f"preflight ran on node {where['node_id'][:8]} ({where['ip']}); its actor ended")
        log.info("%s preflight on node %s", self.side, where["node_id"][:8])
        if answer is not None:
            raise self._failure(answer)

    def _note(self, text: str) -> None:
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(f"# qgate: {text}\n")

    def _pull_log(self) -> None:
        """Append what the node's log gained since the last pull to the driver's copy."""
        ray = import_ray()
        with self._pull_lock:
            if self._actor is None:
                return
            text, offset = ray.get(self._actor.log_since.remote(self._offset), timeout=30)
            if text:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(text)
            self._offset = offset

    def _pump_log(self) -> None:
        while not self._pump_stop.wait(_LOG_POLL_S):
            with contextlib.suppress(Exception):  # a busy or dying actor: the next pull or stop
                self._pull_log()

    def wait_ready(self) -> None:
        """Wait for the actor's start; RuntimeFailure (everything stopped) when it fails."""
        ray = import_ray()
        deadline = time.monotonic() + self.local.startup_timeout_s + PLACEMENT_TIMEOUT_S
        try:
            while True:
                done, _ = ray.wait([self._ready], timeout=0.5)
                if done:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeFailure(
                        self.role,
                        f"not placed and ready within {deadline - time.monotonic():.0f} s "
                        f"(needs {self.needs.as_dict()}; log: {self.log_path})",
                    )
            try:
                answer = ray.get(self._ready)
                where = ray.get(self._actor.where.remote(), timeout=_CALL_TIMEOUT_S)
            except ray.exceptions.RayError as exc:
                raise RuntimeFailure(self.role, f"its Ray actor failed: {exc}") from exc
            with contextlib.suppress(Exception):
                self._pull_log()
            if "error" in answer:
                raise self._failure(answer["error"])
            self._base_url = answer["ok"]["base_url"]
            self._effective = EffectiveConfig.model_validate(answer["ok"]["config"])
            self.placement = LifePlacement(
                side=self.side,
                node_id=where["node_id"],
                ip=where["ip"],
                needs=self.needs,
                facts=dict(answer["ok"].get("facts") or {}),
            )
            log.info("%s life on node %s (%s)", self.side, where["node_id"][:8], self._base_url)
        except BaseException:
            self.stop()
            raise

    @property
    def node_name(self) -> str | None:
        """The node's address and short id, once the life is placed."""
        p = self.placement
        return f"{p.ip} ({p.node_id[:12]})" if p is not None else None

    def _failure(self, error: dict[str, Any]) -> RuntimeFailure | BadInput:
        message = str(error["message"])
        if error.get("bad"):  # the node cannot run what the side asks (exit 2)
            return BadInput(f"{self.side} on its node: {message}", details=error.get("tail"))
        node_log = str(error.get("node_log") or "")
        if node_log:
            message = message.replace(node_log, str(self.log_path))
        message = message.replace(f"log: {self.local.run_dir}", f"log: {self.log_path.parent}")
        return RuntimeFailure(
            self.role, message, list(error.get("tail") or []), error.get("returncode")
        )

    def effective_config(self) -> EffectiveConfig:
        if self._effective is None:
            raise RuntimeFailure(self.role, "no effective configuration: the server is not ready")
        return self._effective

    def check_alive(self, timeout_s: float = 30.0) -> None:
        """RuntimeFailure when the server exited or stopped answering, or its actor is gone."""
        ray = import_ray()
        if self._actor is None:
            raise RuntimeFailure(self.role, "not started")
        try:
            problem = ray.get(
                self._actor.check_alive.remote(timeout_s), timeout=timeout_s + _CALL_TIMEOUT_S
            )
        except (ray.exceptions.RayError, TimeoutError) as exc:
            self.stop()
            raise RuntimeFailure(self.role, f"its Ray actor is gone: {exc}") from exc
        if problem is not None:
            with contextlib.suppress(Exception):
                self._pull_log()
            raise self._failure(problem)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The server frozen on its node inside the block (the idle side of a perf block)."""
        ray = import_ray()
        if self._actor is None or self._stopped:
            yield
            return
        ray.get(self._actor.pause.remote(True), timeout=_CALL_TIMEOUT_S)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                ray.get(self._actor.pause.remote(False), timeout=_CALL_TIMEOUT_S)

    def stop(self) -> None:
        """Stop the server on its node, copy the rest of its log, kill the actor; idempotent.

        A second Ctrl-C while waiting goes straight to killing the actor; its guard then
        ends the server's process group on the node.
        """
        if self._actor is None or self._stopped:
            return
        self._stopped = True
        ray = import_ray()
        self._pump_stop.set()
        try:
            with contextlib.suppress(Exception):
                grace = self.local.stop_grace_s + 20
                ray.get(self._actor.stop.remote(), timeout=grace)
            with contextlib.suppress(Exception):
                self._pull_log()
        finally:
            with contextlib.suppress(Exception):
                ray.kill(self._actor, no_restart=True)
            self._note("stopped; its actor ended")
