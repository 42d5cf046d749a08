"""The one place qgate imports `ray` (heavy, optional: `pip install 'qgate-llm[ray]'`).

`connect` joins a running cluster as its driver (an address `HOST:PORT`, or `auto`
for the cluster this machine belongs to) and shuts the connection down when qgate
exits, which also ends every actor it started; `nodes` lists the alive nodes.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from qgate.cluster.placement import NodeInfo
from qgate.errors import BadInput, InfrastructureError

__all__ = ["ADDRESS_ENV", "connect", "import_ray", "nodes", "on_nodes", "ray_version"]

ADDRESS_ENV = "RAY_ADDRESS"


def import_ray() -> ModuleType:
    """`ray`, or BadInput naming the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise BadInput("a Ray cluster needs Ray: pip install 'qgate-llm[ray]' (Ray 2.60)") from exc
    return ray


def ray_version() -> str:
    return str(import_ray().__version__)


def connect(address: str | None, named_by: str = "--cluster") -> str:
    """Join the cluster at `address` (else $RAY_ADDRESS) unless already joined; its address.

    `named_by` says where the address came from, for the error when it cannot be joined.
    The connection is shut down at exit (the actors of the run end with it).
    """
    ray = import_ray()
    if ray.is_initialized():
        return str(ray.get_runtime_context().gcs_address)
    target = address or os.environ.get(ADDRESS_ENV)
    if not target:
        raise BadInput(
            f"no Ray cluster named: give --cluster ADDRESS, set {ADDRESS_ENV}, or the "
            "profile's cluster.address"
        )
    try:
        ray.init(address=target, logging_level="WARNING", log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InfrastructureError(
            f"cannot join the Ray cluster at {target} ({named_by}): {exc}"
        ) from exc
    atexit.register(ray.shutdown)
    return str(ray.get_runtime_context().gcs_address)


def _own(resources: dict[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in resources.items() if not k.startswith("node:")}


def nodes() -> list[NodeInfo]:
    """The alive nodes of the joined cluster, in Ray's order, with what each has free now
    (Ray's available resources per node: what other lives leave)."""
    ray = import_ray()
    from ray._private.state import available_resources_per_node  # Ray's developer API

    free: dict[str, dict[str, float]] = available_resources_per_node()  # type: ignore[no-untyped-call]
    out = []
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        available = free.get(n["NodeID"])
        out.append(
            NodeInfo(
                node_id=n["NodeID"],
                ip=n["NodeManagerAddress"],
                resources=_own(n["Resources"]),
                available=_own(available) if available is not None else None,
            )
        )
    return out


def on_nodes(
    fn: Callable[..., Any], node_ids: Sequence[str], *args: Any, timeout_s: float = 300.0
) -> list[Any]:
    """`fn(*args)` run on each of the nodes `node_ids` (a Ray task pinned there, holding no
    resources, so a busy node answers too); the answers in order."""
    ray = import_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(fn)
    refs = [
        task.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False)
        ).remote(*args)
        for node in node_ids
    ]
    try:
        return list(ray.get(refs, timeout=timeout_s))
    except (ray.exceptions.RayError, TimeoutError) as exc:
        raise InfrastructureError(f"a node did not answer what it is: {exc}") from exc
