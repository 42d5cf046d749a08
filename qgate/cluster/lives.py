"""The Ray executor: every server life of a run a Ray actor on a node of the cluster.

It implements the executor contract (qgate/runtime/lives.py, `Lives`): the
runtime of a side is the one the local run would make (qgate/runtime/factory.py),
wrapped in a `RayLife` that starts it on a node with the side's resources
(qgate/cluster/life.py). Endpoints (servers already running) are not placed:
they are used as they are. `side_by_side` tells the plan whether the reference
and the candidate can run at once (both fit on the cluster), `provenance` what
the report records: the Ray version, each life's node and resources, and where
each side's perf blocks ran, `planned` what `qgate plan` shows: the waves of lives on the
cluster's nodes. The fresh lives of later perf rounds are pinned to
the first round's nodes, swapped in alternating rounds (qgate/cluster/rounds.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from qgate.cluster import ray_api
from qgate.cluster.life import RayLife
from qgate.cluster.placement import assign, capacity
from qgate.cluster.plan import cluster_plan, describe_cluster, life_needs
from qgate.cluster.rounds import round_node, speed_design
from qgate.core.plan import Plan
from qgate.core.provenance import ClusterLife, ClusterProvenance
from qgate.core.records import Role
from qgate.core.serving import Runtime
from qgate.errors import BadInput
from qgate.profile import Profile
from qgate.runtime.factory import make_runtime
from qgate.runtime.lives import Lives, PlannedElsewhere
from qgate.runtime.server import ServerProcess

__all__ = ["RayLives"]

_NESTED = ("candidates", "attribution")


def _side(role: Role, logs: Path, round: int = 0) -> str:
    """'reference', 'candidate', or the candidate's or trial's name (its run folder's); a
    later perf round's logs sit one folder deeper (`round-N`, qgate/run/context.py)."""
    folder = logs.parent.parent if round else logs.parent
    return folder.name if folder.parent.name in _NESTED else role


class RayLives(Lives):
    """Each life an actor on a node of the Ray cluster at `address` (else $RAY_ADDRESS).

    What a life holds on its node: `custom` resources per side when given, else the
    profile's `cluster` block (qgate/cluster/plan.py, `life_needs`).
    """

    places_lives = True  # lives on nodes share no device or cores: both sides start at once

    def __init__(
        self,
        address: str | None,
        named_by: str = "--cluster",
        custom: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        self.asked, self.named_by = address, named_by
        self.address = ray_api.connect(address, named_by)
        self.ray_version = ray_api.ray_version()
        self.nodes = ray_api.nodes()
        self.custom = {k: dict(v) for k, v in custom.items()} if custom is not None else None
        self._lives: list[RayLife] = []

    def runtime(
        self, profile: Profile, role: Role, model: Path, logs: Path, *, round: int = 0
    ) -> Runtime:
        local = make_runtime(profile, role, model, logs)
        if not isinstance(local, ServerProcess):
            return local  # an endpoint: already running somewhere, nothing to place
        side = _side(role, logs, round)
        needs = life_needs(profile, role, self.custom)
        first = self._first_nodes()
        node_id, swap = round_node(side, round, first, [s for s in first if s != "reference"])
        node = next((n for n in self.nodes if n.node_id == node_id), None)
        if swap:  # a side's pool (custom resources) would hold it on its own node
            needs = needs.model_copy(update={"resources": {}})
        life = RayLife(local, needs, side, node)
        life.round = round
        self._lives.append(life)
        return life

    def _first_nodes(self) -> dict[str, str]:
        """Each side's node in perf round 0 (its last life that got ready there)."""
        return {
            life.placement.side: life.placement.node_id
            for life in self._lives
            if life.placement is not None and life.round == 0
        }

    def at_once(self, profile: Profile) -> int:
        """How many candidate lives of `profile` the cluster holds at once (at least 1)."""
        return max(1, capacity(life_needs(profile, "candidate", self.custom), self.nodes))

    def stop_all(self) -> None:
        """Stop every life made so far (each stop is idempotent)."""
        for life in list(self._lives):
            life.stop()

    def side_by_side(self, profile: Profile) -> tuple[str, str] | None:
        """Where the reference and the candidate go when both fit at once; None otherwise."""
        needs = [life_needs(profile, role, self.custom) for role in ("reference", "candidate")]
        placed = assign(needs, self.nodes)
        if isinstance(placed, str):
            return None
        return tuple(  # type: ignore[return-value]
            f"a Ray node with {', '.join(f'{k} {v:g}' for k, v in n.as_dict().items() if v)}"
            + (" (its own)" if len({p.node_id for p in placed}) == 2 else "")
            for n in needs
        )

    def lives(self) -> list[ClusterLife]:
        """Every life that got ready, in the order they were made."""
        totals = {n.node_id: n.resources for n in self.nodes}
        return [
            ClusterLife(
                side=life.placement.side,
                node_id=life.placement.node_id,
                ip=life.placement.ip,
                resources=life.placement.needs.as_dict(),
                node_resources=dict(totals.get(life.placement.node_id, {})),
                round=life.round,
            )
            for life in self._lives
            if life.placement is not None
        ]

    def provenance(self) -> ClusterProvenance:
        """The cluster, each life's node, and where each side's perf blocks ran."""
        lives = self.lives()
        return ClusterProvenance(
            ray_version=self.ray_version,
            address=self.address,
            lives=lives,
            speed_design=speed_design(lives),
        )

    def planned(
        self,
        plan: Plan,
        profiles: Sequence[tuple[str, Profile]],
        *,
        changes: Mapping[str, int],
        life_s: float | None,
    ) -> PlannedElsewhere:
        """The waves of `plan` on the cluster's nodes; BadInput when a life fits on none."""
        out = cluster_plan(
            plan,
            profiles,
            self.nodes,
            self.address,
            changes=changes,
            custom=self.custom,
            life_s=life_s,
        )
        if isinstance(out, str):
            raise BadInput(f"{self.named_by} {self.asked}: {out}")
        return PlannedElsewhere(describe_cluster(out), out.model_dump(mode="json"))
