"""`qgate run` of a profile with several candidates, end to end on real vLLM (CPU, SmolLM2).

One reference and two candidates (a serving-policy no-op: prefix caching on;
a precision change: emulated FP8 weights), few items and a tiny perf
scenario: the reference runs once, each candidate is gated and measured
against it, one signed report verifies against the profile, and its views
show the side-by-side table.
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

PROFILE = """
name: it-multi
model: {embedded: smollm2}
target: {accelerator: cpu}
engine:
  cpu_dtype: auto
  args: {max_model_len: 1024, enforce_eager: true}
  startup_timeout_s: 600
  preflight: never
reference:
  args: {enable_prefix_caching: false}
candidates:
  prefix-cache:
    description: serving policy only
    args: {enable_prefix_caching: true}
  fp8-weights:
    required: false
    args: {enable_prefix_caching: false}
    emulate_weights: {format: fp8_e4m3}
quality:
  concurrency: 4
  math: {prompts: [short], limit: 6, max_drop: 0.5}
  divergence: {sequences: 2, tokens: 8, max_mean_kld: 1.0, max_p99_kld: 5.0,
               min_top1_agreement: 0.5}
perf:
  scenarios:
    - {name: tiny, input_tokens: 32, output_tokens: 4, concurrency: 1, warmup: 0, requests: 2}
"""


def qgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*QGATE, *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )


def test_one_run_several_candidates(tmp_path: Path, smollm2_checkpoint: Path) -> None:
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.pop("GITHUB_STEP_SUMMARY", None)
    assert qgate("keygen", "--out", str(tmp_path / "k"), env=env).returncode == 0
    profile = tmp_path / "multi.yaml"
    profile.write_text(PROFILE)
    done = qgate(
        "run",
        str(profile),
        "--out",
        str(tmp_path / "runs"),
        "--key",
        str(tmp_path / "k.pem"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--no-progress",
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "candidate prefix-cache (required): PASS; perf ran" in done.stdout, done.stdout
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("report: "))
    envelope = Path(line.split(": ", 1)[1].strip())
    run_dir = envelope.parent
    # one reference server for quality and one for perf, whatever the number of candidates
    assert (run_dir / "raw" / "reference-quality.json").is_file()
    assert (run_dir / "raw" / "reference-perf.json").is_file()
    for name in ("prefix-cache", "fp8-weights"):
        own = run_dir / "candidates" / name
        for file in ("raw/candidate-quality.json", "raw/candidate-perf.json", "logs/candidate.log"):
            assert (own / file).is_file(), f"{name}/{file}"
    verified = qgate(
        "verify",
        str(envelope),
        "--pubkey",
        str(tmp_path / "k.pub.pem"),
        "--profile",
        str(profile),
        env=env,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "table of 2 candidates and overall verdict" in verified.stdout
    md = (run_dir / "report.md").read_text()
    for column in (
        "Out tok/s ratio [95% CI]",
        "Req out tok/s ratio",
        "Decode tok/s ratio",
        "TTFT p90 ratio",
    ):
        assert column in md
    shown = qgate("show", str(envelope), "--format", "json", env=env)
    report = json.loads(shown.stdout)
    rows = {r["candidate"]: r for r in report["table"]}
    assert rows["prefix-cache"]["speed"][0]["ratios"]["output_throughput"]["ratio"] > 0
    fp8 = next(c for c in report["candidates"] if c["name"] == "fp8-weights")["report"]
    assert any("fp8_e4m3" in e for e in fp8["emulated"])
    assert "<testsuite " in (run_dir / "junit.xml").read_text()
    picked = qgate("compare", f"{envelope}#prefix-cache", f"{envelope}#fp8-weights", env=env)
    assert picked.returncode == 0, picked.stdout + picked.stderr
