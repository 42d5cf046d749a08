"""Perf rounds on a cluster: swapped nodes in alternating rounds, and the design that ran (pure).

In core (not in qgate/cluster/) because `qgate verify` re-derives the design from the
recorded lives (qgate/report/verify/cluster.py) and imports nothing of the cluster layer.

Two nodes of one kind still differ (clocks, thermals, a noisy neighbour), and a
ratio of two sides measured on two nodes carries that difference. With perf
rounds (perf.rounds: fresh lives of both sides, ABBA order, qgate/run/rounds.py)
a run with one candidate swaps the nodes in the rounds that swap the order
(`swapped`: people's rounds 2, 4, ...): the reference's life goes to the node the
candidate's first life ran on and the candidate's to the reference's, pinned
there (Ray's NodeAffinitySchedulingStrategy, not soft); the other rounds go back
to the first round's nodes. The custom resources that pin each side to its
pool are not asked in a swapped round (they would hold each side on its own
node). The across-round interval then spans both placements, so a node
difference shows in it instead of hiding in the point ratio. With several
candidates there is no one node to swap with: every round stays on the first
round's nodes, and the design says node differences are not cancelled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from qgate.core.plan import swapped
from qgate.core.provenance import ClusterLife

__all__ = ["round_node", "speed_design"]


def round_node(
    side: str, round: int, first: Mapping[str, str], candidates: Sequence[str]
) -> tuple[str | None, bool]:
    """The node id a life of `side` in perf round `round` is pinned to, and whether the
    nodes are swapped in it; (None, False): placed as any life (round 0, or no first node).

    `first`: each side's node in round 0 ('reference' and the candidates' names);
    `candidates`: the sides of round 0 that are candidates (the swap needs exactly one).
    """
    if round == 0:
        return None, False
    reference = first.get("reference")
    if swapped(round) and len(candidates) == 1 and reference is not None:
        other = first.get(candidates[0])
        if other is not None and other != reference:
            return (other if side == "reference" else reference), True
    return first.get(side), False


def speed_design(lives: Sequence[ClusterLife]) -> str:
    """How the run's speed ratios faced node differences, from where each life ran."""
    rounds = 1 + max((life.round for life in lives), default=0)
    first = {life.side: life.node_id for life in lives if life.round == 0}
    reference = first.get("reference")
    others = {side: node for side, node in first.items() if side != "reference"}
    if reference is None or not others:
        return "one side only ran on the cluster: no ratio across nodes"
    fresh = f" ({rounds} rounds of fresh lives, ABBA)" if rounds > 1 else ""
    if all(life.node_id == reference for life in lives):
        return f"same node: every side's perf blocks ran on node {reference[:12]}{fresh}"
    if rounds > 1 and len(others) == 1 and _swapped_every_other(lives, first):
        (candidate,) = others
        return (
            f"swapped nodes in alternating rounds ({rounds} rounds): in round 1 the reference "
            f"on node {reference[:12]}, {candidate} on node {first[candidate][:12]}; rounds 2, "
            "4, ... the reverse (fresh lives, ABBA), so a node difference moves the round "
            "ratios apart and widens the across-round interval instead of biasing the ratio"
        )
    how = f" in every one of {rounds} rounds" if rounds > 1 else ""
    return (
        f"each side's perf blocks ran in its own life on its own node (listed per life){how}, "
        "interleaved with the other side paused; node differences are not cancelled "
        "(no swapped blocks): the ratio assumes nodes of one kind"
    )


def _swapped_every_other(lives: Sequence[ClusterLife], first: Mapping[str, str]) -> bool:
    """Whether every later round ran each side where `round_node` puts it (swapped ones
    swapped), with at least one swapped round."""
    candidates = [side for side in first if side != "reference"]
    later = [life for life in lives if life.round > 0]
    if not any(swapped(life.round) for life in later):
        return False
    return all(
        life.node_id == round_node(life.side, life.round, first, candidates)[0] for life in later
    )
