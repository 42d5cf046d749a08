"""Perf rounds on a cluster: swapped nodes in alternating rounds, and the design the report
names (qgate/cluster/rounds.py, and RayLives placing each round's fresh lives); fake nodes,
no Ray."""

from __future__ import annotations

from pathlib import Path

import pytest

from qgate.cluster.life import LifePlacement, RayLife
from qgate.cluster.lives import RayLives
from qgate.cluster.placement import NodeInfo, needs_of
from qgate.cluster.rounds import round_node, speed_design
from qgate.core.provenance import ClusterLife
from qgate.profile.load import parse_profile_text

A, B, C = "a" * 40, "b" * 40, "c" * 40
FIRST = {"reference": A, "candidate": B}


@pytest.mark.parametrize(
    ("side", "round", "node", "swapped"),
    [
        ("reference", 0, None, False),  # round 1: placed as any life
        ("candidate", 0, None, False),
        ("reference", 1, B, True),  # round 2: the reference on the candidate's first node
        ("candidate", 1, A, True),  # ... and the candidate on the reference's
        ("reference", 2, A, False),  # round 3: back on the first round's nodes
        ("candidate", 2, B, False),
        ("candidate", 3, A, True),  # round 4: swapped again
    ],
)
def test_alternating_rounds_swap_the_two_nodes(
    side: str, round: int, node: str | None, swapped: bool
) -> None:
    assert round_node(side, round, FIRST, ["candidate"]) == (node, swapped)


def test_no_swap_without_two_nodes_or_with_several_candidates() -> None:
    same = {"reference": A, "candidate": A}
    assert round_node("reference", 1, same, ["candidate"]) == (A, False)
    several = {"reference": A, "x": B, "y": C}
    assert round_node("reference", 1, several, ["x", "y"]) == (A, False)
    assert round_node("y", 1, several, ["x", "y"]) == (C, False)
    assert round_node("candidate", 1, {"candidate": B}, ["candidate"]) == (B, False)


def _life(side: str, node: str, round: int = 0) -> ClusterLife:
    return ClusterLife(side=side, node_id=node, ip="10.0.0.1", resources={"GPU": 8}, round=round)


def test_the_design_says_which_placement_ran() -> None:
    one_round = [_life("reference", A), _life("candidate", B)]
    assert "not cancelled" in speed_design(one_round)
    assert "rounds" not in speed_design(one_round)
    swapped = [
        *one_round,
        _life("reference", B, 1),
        _life("candidate", A, 1),
        _life("reference", A, 2),
        _life("candidate", B, 2),
    ]
    design = speed_design(swapped)
    assert design.startswith("swapped nodes in alternating rounds (3 rounds): in round 1 the ")
    assert f"reference on node {A[:12]}, candidate on node {B[:12]}" in design
    same = [_life("reference", A), _life("candidate", A), _life("reference", A, 1)]
    assert speed_design(same) == (
        f"same node: every side's perf blocks ran on node {A[:12]} (2 rounds of fresh lives, ABBA)"
    )
    # a later round that did not swap (a node gone, several candidates): not claimed
    unswapped = [*one_round, _life("reference", A, 1), _life("candidate", B, 1)]
    assert "not cancelled" in speed_design(unswapped)
    assert "in every one of 2 rounds" in speed_design(unswapped)
    several = [_life("reference", A), _life("x", B), _life("y", C), _life("x", B, 1)]
    assert "not cancelled" in speed_design(several)


PROFILE = """\
name: t
model: {embedded: smollm2}
candidate:
  args: {kv_cache_dtype: fp8}
quality:
  math: {max_drop: 0.1}
cluster: {reference: {ref: 1}, candidates: {cand: 1}}
"""


def _lives(nodes: list[NodeInfo]) -> RayLives:
    """RayLives as joined to a cluster of `nodes`, without Ray."""
    lives = RayLives.__new__(RayLives)
    lives.address, lives.ray_version, lives.nodes, lives.custom = "h:1", "2.60.0", nodes, None
    lives._lives = []
    lives.fingerprints = {}
    return lives


def test_ray_lives_pin_a_swapped_rounds_lives_to_the_other_sides_node(tmp_path: Path) -> None:
    nodes = [
        NodeInfo(node_id=A, ip="10.0.0.1", resources={"CPU": 4, "ref": 1}),
        NodeInfo(node_id=B, ip="10.0.0.2", resources={"CPU": 4, "cand": 1}),
    ]
    lives = _lives(nodes)
    profile = parse_profile_text(PROFILE, "p.yaml", tmp_path, check_files=False)
    logs = tmp_path / "run" / "logs"
    first = []
    for role, node in (("reference", nodes[0]), ("candidate", nodes[1])):
        life = lives.runtime(profile, role, tmp_path, logs)  # type: ignore[arg-type]
        assert isinstance(life, RayLife) and life.node is None  # round 1: placed by Ray
        life.placement = LifePlacement(
            side=role, node_id=node.node_id, ip=node.ip, needs=life.needs
        )
        first.append(life)
    assert first[0].needs.resources == {"ref": 1.0}
    ref2 = lives.runtime(profile, "reference", tmp_path, logs / "round-2", round=1)
    cand2 = lives.runtime(profile, "candidate", tmp_path, logs / "round-2", round=1)
    assert isinstance(ref2, RayLife) and isinstance(cand2, RayLife)
    assert (ref2.side, ref2.node, ref2.round) == ("reference", nodes[1], 1)
    assert (cand2.side, cand2.node) == ("candidate", nodes[0])
    # pools not asked; a CPU life holds every core of its node (4 here), its server bound to them
    assert ref2.needs == needs_of("cpu", 1, 4.0) and cand2.needs.resources == {}
    assert (ref2.cores, ref2.emulate) == (4, None)
    ref3 = lives.runtime(profile, "reference", tmp_path, logs / "round-3", round=2)
    assert isinstance(ref3, RayLife)
    assert ref3.node == nodes[0] and ref3.needs.resources == {"ref": 1.0}  # its own pool again
