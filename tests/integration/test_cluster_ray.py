"""Lives on a simulated two-node Ray cluster: each an actor on its own node, nothing left after.

Stand-in engines (tests/integration/fake_vllm.py, started exactly as vLLM would be)
keep these cheap: what is tested is the placement, the HTTP from the driver, the log
copied back, the stop on every path, and attribution's rounds run as waves.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import psutil
import pytest

from qgate.cluster import ray_api
from qgate.cluster.life import RayLife
from qgate.cluster.placement import LifeNeeds, assign, capacity, needs_of
from qgate.cluster.waves import Wave, ddmin_on
from qgate.core import http
from qgate.core.ddmin import Key, Outcome, search
from qgate.errors import RuntimeFailure
from qgate.runtime.vllm_server import VllmServer

pytestmark = pytest.mark.integration


def _stand_in(role: str, run_dir: Path, launcher: list[str], served: str) -> VllmServer:
    return VllmServer(
        role=role,  # type: ignore[arg-type]
        model_path=Path("/stand-in/model"),
        served_model=served,
        run_dir=run_dir,
        launcher=launcher,
        accelerator="cpu",
        startup_timeout_s=120,
    )


def _left(marker: str) -> list[str]:
    """Processes of this test still alive (not zombies): servers, guards, actors."""
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if marker in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
            out.append(cmd[:120])
    return out


def _gone(marker: str, timeout: float = 20.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := _left(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _idle(timeout: float = 30.0) -> list[str]:
    """Wait until Ray hears every node's resources free again (an ended life's actor gives
    them back a moment later); the nodes still holding some at the deadline."""
    from qgate.cluster.ray_api import nodes

    deadline = time.monotonic() + timeout
    while True:
        busy = [n.node_id for n in nodes() if n.free != n.resources]
        if not busy or time.monotonic() > deadline:
            return busy
        time.sleep(0.2)


def test_each_life_runs_on_its_own_node_and_the_driver_talks_to_it(
    ray_cluster: object, fake_launcher: list[str], tmp_path: Path
) -> None:
    ray_api.connect(ray_cluster.address)  # type: ignore[attr-defined]
    nodes = [n for n in ray_api.nodes() if n.resources.get("CPU")]  # the head holds none
    assert len(nodes) == 2
    marker = f"stand-in-{uuid.uuid4().hex[:8]}"
    needs = [needs_of("cpu", 1, 1, {"ref": 1}), needs_of("cpu", 1, 1, {"cand": 1})]
    placed = assign(needs, nodes)
    assert not isinstance(placed, str)
    lives = [
        RayLife(_stand_in(role, tmp_path, fake_launcher, marker), need, f"{role}-{marker}", node)
        for role, need, node in zip(("reference", "candidate"), needs, placed, strict=True)
    ]
    try:
        for life in lives:
            life.start()
        for life in lives:
            life.wait_ready()
        ids = [life.placement.node_id for life in lives if life.placement]
        assert ids == [n.node_id for n in placed] and len(set(ids)) == 2
        for life in lives:
            models = http.get_json(f"{life.base_url}/models", timeout=10)
            assert models["data"][0]["id"] == marker
            assert life.effective_config().engine_version == "0.0.0-fake"
            life.check_alive()
        assert len(_left(marker)) >= 4  # two servers and their guards, on their nodes
    finally:
        for life in lives:
            life.stop()
    assert _gone(marker) == []
    log = (tmp_path / "candidate.log").read_text()
    assert "fake vllm: serving on" in log  # the node's log, copied back to the driver
    assert "stopped; its actor ended" in log


def test_a_life_that_fails_on_its_node_is_reported_with_its_log_and_leaves_nothing(
    ray_cluster: object, fake_launcher: list[str], tmp_path: Path
) -> None:
    ray_api.connect(ray_cluster.address)  # type: ignore[attr-defined]
    marker = f"stand-in-{uuid.uuid4().hex[:8]}"
    life = RayLife(
        _stand_in("candidate", tmp_path, [*fake_launcher, "--fake-mode", "exit"], marker),
        needs_of("cpu", 1, 1, {"cand": 1}),
        f"candidate-{marker}",
    )
    with pytest.raises(RuntimeFailure) as err, life:
        pass
    assert "exited during startup" in err.value.message
    assert str(tmp_path / "candidate.log") in err.value.message  # the driver's copy
    assert any("refuses this configuration" in line for line in err.value.log_tail)
    assert _gone(marker) == []


def test_attribution_rounds_run_as_parallel_waves_on_the_cluster(
    ray_cluster: object, fake_launcher: list[str], tmp_path: Path
) -> None:
    """Three changes, two nodes: three lives one after another become two waves of two."""
    ray_api.connect(ray_cluster.address)  # type: ignore[attr-defined]
    nodes = ray_api.nodes()
    one = LifeNeeds(num_cpus=max(n.resources.get("CPU", 0) for n in nodes))  # a node each
    deadline = time.monotonic() + 20  # Ray's available resources catch up with the last test
    while (width := capacity(one, nodes)) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
        nodes = ray_api.nodes()
    assert width == 2
    marker = f"stand-in-{uuid.uuid4().hex[:8]}"
    spans: dict[Key, tuple[float, float, str]] = {}

    def verdict(key: Key) -> Outcome:
        return "FAIL" if "kv" in key else "PASS"

    def trial(key: Key, wave: Wave) -> Outcome:
        name = "-".join(key)
        server = _stand_in("candidate", tmp_path / name, fake_launcher, marker)
        with wave.hold(RayLife(server, one, f"only-{name}-{marker}")) as life:
            start = time.monotonic()
            http.get_json(f"{life.base_url}/models", timeout=10)  # the suites, from the driver
            time.sleep(2.0)
            assert life.placement is not None
            spans[key] = (start, time.monotonic(), life.placement.node_id)
        return verdict(key)

    waves: list[list[Key]] = []
    names = ["weights", "kv", "kernels"]
    found = ddmin_on(names, trial, 8, width, on_wave=waves.append)
    one = search(names, verdict, 8)  # one at a time: (weights kv), (weights), (kv)
    assert (found.failing, found.complete) == (one.failing, one.complete) == (("kv",), True)
    assert (found.tests, one.tests) == (4, 3)  # one life more, one wave less
    assert waves == [[("weights", "kv"), ("kernels",)], [("weights",), ("kv",)]]
    first, second = spans[("weights", "kv")], spans[("kernels",)]
    assert first[0] < second[1] and second[0] < first[1], "a wave's trials did not overlap"
    assert first[2] != second[2], "a wave's trials shared a node"
    assert _gone(marker) == []


def test_plan_on_the_cluster_says_which_lives_run_together(ray_cluster: object) -> None:
    from click.testing import CliRunner

    from qgate.cli.main import main

    shipped = Path(__file__).resolve().parents[2] / "precision_profiles"
    address = ray_cluster.address  # type: ignore[attr-defined]
    # the plan places lives on what is free now: the last test's lives gone first
    ray_api.connect(address)
    assert _idle() == [], "the last test's lives still hold their nodes"
    result = CliRunner().invoke(
        main, ["plan", str(shipped / "smollm2-cpu-multi.yaml"), "--cluster", address]
    )
    assert result.exit_code == 0, result.output
    head = 1 if ray_cluster.nodes else 0  # type: ignore[attr-defined]  # the empty head
    assert f"cluster {address}: {2 + head} node(s)" in result.output
    waves = [line for line in result.output.splitlines() if line.startswith("  wave ")]
    assert len(waves) == 3 and waves[0].startswith("  wave 1: reference on ")
    assert "on the cluster against 5 life length(s) locally" in result.output


def test_a_dry_preflight_runs_vllms_parser_on_the_candidates_node(
    ray_cluster: object, smollm2_checkpoint: Path, tmp_path: Path
) -> None:
    """The candidate's command line through vLLM's own parser, in an actor on the node its
    life would get ('cand'), not on the driver; a refusal names the flag and the driver's
    copy of the log, and no actor is left. One vLLM parse (~20 s here): the accepted line's
    path through the same actor is tests/unit/cluster/test_cluster_life.py's, stand-in Ray."""
    ray_api.connect(ray_cluster.address)  # type: ignore[attr-defined]
    cand = next(n for n in ray_api.nodes() if "cand" in n.resources)
    marker = f"dry-{uuid.uuid4().hex[:8]}"

    def life(folder: str, args: dict[str, object]) -> RayLife:
        server = VllmServer(
            role="candidate",
            model_path=smollm2_checkpoint,
            served_model=marker,
            run_dir=tmp_path / folder,
            accelerator="cpu",
            args={"max_model_len": 1024, "enforce_eager": True, **args},  # type: ignore[dict-item]
        )
        return RayLife(server, needs_of("cpu", 1, 1, {"cand": 1}), f"candidate-{marker}")

    bad = life("bad", {"kv_cache_dtype": "fp9"})
    assert bad.can_dry_check()
    with pytest.raises(RuntimeFailure) as err:
        bad.dry_check()
    assert "preflight: vLLM refused the command line" in err.value.message
    assert "--kv-cache-dtype: invalid choice: 'fp9'" in err.value.message
    assert str(tmp_path / "bad" / "candidate.log") in err.value.message
    log = (tmp_path / "bad" / "candidate.log").read_text()  # vLLM's answer, from the node
    assert f"preflight ran on node {cand.node_id[:8]}" in log and "fp9" in log
    assert _gone(marker) == [] and _gone("ray::LifeHost") == []


def test_perf_rounds_swap_the_two_sides_nodes(
    ray_cluster: object, fake_launcher: list[str], tmp_path: Path
) -> None:
    """Round 1 puts each side on its pool's node (reference 'ref', candidate 'cand'); round 2's
    fresh lives run on each other's node, and the report's design says so."""
    from qgate.cluster.lives import RayLives
    from qgate.profile.load import parse_profile_text

    address = ray_cluster.address  # type: ignore[attr-defined]
    marker = f"stand-in-{uuid.uuid4().hex[:8]}"
    launcher = ", ".join(f"'{word}'" for word in fake_launcher)
    text = (
        f"name: t\nmodel: {{embedded: smollm2, served_name: {marker}}}\n"
        f"engine: {{launcher: [{launcher}], startup_timeout_s: 120}}\n"
        "candidate: {args: {kv_cache_dtype: fp8}}\nquality: {math: {max_drop: 0.1}}\n"
        f"cluster: {{address: '{address}', reference: {{ref: 1}}, candidates: {{cand: 1}}}}\n"
    )
    profile = parse_profile_text(text, "p.yaml", tmp_path, check_files=False)
    lives = RayLives(address)
    by_pool = {p: next(n.node_id for n in lives.nodes if p in n.resources) for p in ("ref", "cand")}

    def round_of(k: int) -> list[str]:
        logs = tmp_path / "logs" / (f"round-{k + 1}" if k else "")
        made = [
            lives.runtime(profile, r, tmp_path, logs, round=k) for r in ("reference", "candidate")
        ]
        try:
            for life in made:
                life.start()
            for life in made:
                life.wait_ready()  # type: ignore[attr-defined]
            return [life.placement.node_id for life in made]  # type: ignore[attr-defined]
        finally:
            for life in made:
                life.stop()

    assert round_of(0) == [by_pool["ref"], by_pool["cand"]]
    assert round_of(1) == [by_pool["cand"], by_pool["ref"]]
    design = lives.provenance().speed_design
    assert design.startswith("swapped nodes in alternating rounds (2 rounds)"), design
    assert _gone(marker) == []
