"""What a life needs from a node and which node each life of a wave gets."""

from __future__ import annotations

from qgate.cluster.placement import LifeNeeds, NodeInfo, assign, capacity, fits, needs_of


def _node(name: str, **res: float) -> NodeInfo:
    return NodeInfo(node_id=name, ip="10.0.0.1", resources=dict(res))


def test_an_accelerator_life_asks_for_its_target_count_of_gpus_and_a_cpu_life_for_cores() -> None:
    assert needs_of("H200", 8, 1).as_dict() == {"CPU": 1, "GPU": 8}
    assert needs_of("cpu", 8, 2, {"cand": 1}).as_dict() == {"CPU": 2, "cand": 1}


def test_lives_of_one_wave_go_to_distinct_nodes_when_there_are_enough() -> None:
    nodes = [_node("a", CPU=4), _node("b", CPU=4)]
    cpu = LifeNeeds(num_cpus=1)
    assert [n.node_id for n in assign([cpu, cpu], nodes)] == ["a", "b"]  # type: ignore[union-attr]
    # a third shares a node rather than wait
    assert [n.node_id for n in assign([cpu] * 3, nodes)] == ["a", "b", "a"]  # type: ignore[union-attr]


def test_custom_resources_pin_sides_to_their_nodes() -> None:
    nodes = [_node("head", CPU=1, ref=1), _node("worker", CPU=1, cand=1)]
    ref = needs_of("cpu", 1, 1, {"ref": 1})
    cand = needs_of("cpu", 1, 1, {"cand": 1})
    placed = assign([cand, ref], nodes)
    assert not isinstance(placed, str)
    assert [n.node_id for n in placed] == ["worker", "head"]


def test_a_life_no_node_can_hold_is_named_and_one_that_does_not_fit_beside_others_too() -> None:
    nodes = [_node("a", CPU=8, GPU=4)]
    assert (
        assign([needs_of("H200", 8, 1)], nodes)
        == "no node of the cluster has CPU 1, GPU 8 (life 1)"
    )
    four = needs_of("H200", 4, 1)
    assert "does not fit beside the 1 before it" in str(assign([four, four], nodes))


def test_capacity_counts_the_lives_the_cluster_holds_at_once() -> None:
    nodes = [_node("a", CPU=1), _node("b", CPU=1), _node("c", CPU=2, GPU=8)]
    assert capacity(LifeNeeds(num_cpus=1), nodes) == 4
    assert capacity(needs_of("H200", 8, 1), nodes) == 1
    assert capacity(needs_of("H200", 16, 1), nodes) == 0
    assert fits(LifeNeeds(num_cpus=1, resources={"x": 1}), {"CPU": 1}) is False


def test_lives_are_placed_in_what_nodes_have_free_now_not_in_their_totals() -> None:
    """Ray's available resources: a node another run's life fills holds no life of this one,
    and capacity (the waves' width) counts only the free nodes."""
    busy = NodeInfo(node_id="a", ip="10.0.0.1", resources={"CPU": 4}, available={})
    idle = NodeInfo(node_id="b", ip="10.0.0.2", resources={"CPU": 4}, available={"CPU": 4})
    whole = LifeNeeds(num_cpus=4)
    assert [n.node_id for n in assign([whole], [busy, idle])] == ["b"]  # type: ignore[union-attr]
    assert capacity(whole, [busy, idle]) == 1
    assert capacity(whole, [n.model_copy(update={"available": None}) for n in (busy, idle)]) == 2
    assert (
        assign([whole], [busy]) == "no node has CPU 4 free now (life 1; other lives hold the rest)"
    )
