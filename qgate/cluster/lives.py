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
from typing import Any

from qgate.checkpoint.formats import stored_dtype
from qgate.cluster import ray_api
from qgate.cluster.life import RayLife
from qgate.cluster.node import fingerprint_here
from qgate.cluster.placement import LifeNeeds, assign, capacity, fits
from qgate.cluster.plan import cluster_plan, describe_cluster, life_needs
from qgate.cluster.rounds import round_node, speed_design
from qgate.core.plan import Plan
from qgate.core.provenance import ClusterLife, ClusterProvenance
from qgate.core.records import Role
from qgate.core.serving import Runtime
from qgate.errors import BadInput
from qgate.profile import Profile
from qgate.profile.engine_checks import starts_process
from qgate.runtime.capabilities import caps_of, runtime_args, select_machine
from qgate.runtime.factory import make_runtime
from qgate.runtime.fingerprint import Fingerprint, check_target
from qgate.runtime.lives import Lives, PlannedElsewhere
from qgate.runtime.server import ServerProcess

__all__ = ["RayLives"]

_NESTED = ("candidates", "attribution")
_ROLES: tuple[Role, Role] = ("reference", "candidate")


def _want(needs: Mapping[str, LifeNeeds]) -> str:
    return "; ".join(
        f"{role}: " + ", ".join(f"{k} {v:g}" for k, v in n.as_dict().items() if v)
        for role, n in needs.items()
    )


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
        self.fingerprints: dict[str, Fingerprint] = {}  # node id -> taken there (`machine`)

    def machine(self, profile: Profile, model: Path) -> Fingerprint | None:
        """The nodes that could hold a life of `profile`, each fingerprinted on itself (a
        task pinned there: its CPU, accelerators, packages, its copy of `model`'s digests).

        The run decides with one of them (a reference node's), so every such node must
        lead to the same decisions: the same settings chosen for both sides (fallbacks,
        serving dtype), the target met (or its mismatch allowed), the same checkpoint at the
        path; BadInput naming the node otherwise (pin the sides to uniform pools with the
        profile's cluster block). None when no side starts a server (endpoints only)."""
        if not any(starts_process(profile.engine_of(r).kind) for r in _ROLES):
            return None
        self.nodes = ray_api.nodes()
        needs: dict[str, LifeNeeds] = {
            r: life_needs(profile, r, self.custom, self.nodes) for r in _ROLES
        }
        hosts = [n for n in self.nodes if any(fits(x, n.resources) for x in needs.values())]
        if not hosts:
            raise BadInput(
                f"no node of the cluster can hold a life of this profile ({_want(needs)})"
            )
        hosts.sort(key=lambda n: not fits(needs["reference"], n.resources))
        answers = ray_api.on_nodes(fingerprint_here, [n.node_id for n in hosts], str(model))
        self.fingerprints = {
            n.node_id: Fingerprint.model_validate(a) for n, a in zip(hosts, answers, strict=True)
        }
        chosen = None
        first = self.fingerprints[hosts[0].node_id]
        for node in hosts:
            fp = self.fingerprints[node.node_id]
            where = f"node {node.node_id[:12]} ({node.ip}, host {fp.hostname})"
            try:
                check_target(profile.target, fp)
                selection = select_machine(profile, caps_of(fp))
            except BadInput as exc:
                raise BadInput(f"{where}: {exc.message}", details=exc.details) from None
            specs = (selection.reference, selection.candidate)
            if chosen is not None and specs != chosen:
                raise BadInput(
                    f"{where} would run the sides otherwise than node "
                    f"{hosts[0].node_id[:12]} (its CPU: {fp.cpu.model}; a fallback or serving "
                    "dtype differs): pin the sides to uniform nodes with cluster.reference "
                    "and cluster.candidates"
                )
            chosen = specs
            if fp.checkpoint_sha256 is None:
                raise BadInput(
                    f"{where} has no checkpoint at {model}: every node that holds lives needs "
                    "it at the same path (read-only is enough)"
                )
            if fp.checkpoint_sha256 != first.checkpoint_sha256:
                raise BadInput(
                    f"{where} holds other weights at {model} (digest "
                    f"{str(fp.checkpoint_sha256)[:12]}, node {hosts[0].node_id[:12]}: "
                    f"{str(first.checkpoint_sha256)[:12]}): every node needs the same checkpoint"
                )
        return first

    def runtime(
        self, profile: Profile, role: Role, model: Path, logs: Path, *, round: int = 0
    ) -> Runtime:
        local = make_runtime(profile, role, model, logs)
        if not isinstance(local, ServerProcess):
            return local  # an endpoint: already running somewhere, nothing to place
        side = _side(role, logs, round)
        needs = life_needs(profile, role, self.custom, self.nodes)
        first = self._first_nodes()
        node_id, swap = round_node(side, round, first, [s for s in first if s != "reference"])
        node = next((n for n in self.nodes if n.node_id == node_id), None)
        if swap:  # a side's pool (custom resources) would hold it on its own node
            needs = needs.model_copy(update={"resources": {}})
        spec = getattr(profile, role)
        emulate: tuple[dict[str, Any], str] | None = None
        if spec.emulate_weights is not None:  # made on the life's node, in its cache
            dtype = stored_dtype(runtime_args(profile, spec).get("dtype"))
            emulate = (spec.emulate_weights.model_dump(), dtype)
        on_cpu = profile.target.accelerator.lower() == "cpu"
        cores = max(1, int(needs.num_cpus)) if on_cpu else None
        life = RayLife(local, needs, side, node, emulate, cores)
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
        """How many candidate lives of `profile` the cluster holds at once (at least 1), in
        what its nodes have free now."""
        self.nodes = ray_api.nodes()
        needs = life_needs(profile, "candidate", self.custom, self.nodes)
        return max(1, capacity(needs, self.nodes))

    def stop_all(self) -> None:
        """Stop every life made so far (each stop is idempotent)."""
        for life in list(self._lives):
            life.stop()

    def side_by_side(self, profile: Profile) -> tuple[str, str] | None:
        """Where the reference and the candidate go when both fit at once; None otherwise."""
        self.nodes = ray_api.nodes()  # what is free now
        needs = [
            life_needs(profile, role, self.custom, self.nodes)
            for role in ("reference", "candidate")
        ]
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
        out = []
        for life in self._lives:
            if life.placement is None:
                continue
            p = life.placement
            fp = self.fingerprints.get(p.node_id)
            out.append(
                ClusterLife(
                    side=p.side,
                    node_id=p.node_id,
                    ip=p.ip,
                    resources=p.needs.as_dict(),
                    node_resources=dict(totals.get(p.node_id, {})),
                    round=life.round,
                    hostname=p.facts.get("hostname"),
                    cpu=fp.cpu.model if fp is not None else None,
                    checkpoint_sha256=fp.checkpoint_sha256 if fp is not None else None,
                    model_path=p.facts.get("model_path"),
                    node_log=p.facts.get("node_log"),
                )
            )
        return out

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
