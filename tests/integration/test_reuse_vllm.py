"""Reuse passes end to end on real vLLM (CPU, SmolLM2): proof of exercise from the counters.

One run, one reference (prefix caching off) and two candidates: `prefix-cache` serves its
warm pass from the device prefix cache (local_cache_hit share > 0, exercised, PASS);
`no-cache` has the reuse pass configured but cannot serve it from a cache, so its pass gates
end NOT EXERCISED, never PASS. Tiny sets (4 math items in the long form, 2 recall items).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qgate.quality.reuse_records import shares
from qgate.report.model import Report
from qgate.report.render.md import render_markdown

pytestmark = pytest.mark.integration

QGATE = [sys.executable, "-m", "qgate.cli"]

PROFILE = """
name: it-reuse
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
    args: {enable_prefix_caching: true}
  no-cache:
    args: {enable_prefix_caching: false, max_num_seqs: 8}
quality:
  concurrency: 4
  math: {prompts: [long], limit: 4, long_tokens: 384, max_flips: 1}
  recall: {context_tokens: [384], haystacks: 1, depths: [0.3, 0.7]}
  reuse: {passes: [warm], min_exercised_share: 0.5}
"""


def qgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*QGATE, *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )


def _warm(report: dict[str, object], role: str, suite: str) -> dict[str, object]:
    passes = report["quality"]["passes"]  # type: ignore[index]
    run = next(p for p in passes if p["name"] == "warm" and p["role"] == role)
    return next(s for s in run["suites"] if s["suite"] == suite)


def test_warm_pass_exercised_with_prefix_caching_and_not_exercised_without(
    tmp_path: Path, smollm2_checkpoint: Path
) -> None:
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.pop("GITHUB_STEP_SUMMARY", None)
    assert qgate("keygen", "--out", str(tmp_path / "k"), env=env).returncode == 0
    profile = tmp_path / "reuse.yaml"
    profile.write_text(PROFILE)
    done = qgate(
        "run",
        str(profile),
        *("--out", str(tmp_path / "runs"), "--key", str(tmp_path / "k.pem")),
        *("--cache-dir", str(tmp_path / "cache"), "--skip-perf", "--no-progress"),
        env=env,
    )
    # a NOT EXERCISED gate is never a pass: the run fails as for any failed gate
    assert done.returncode == 1, done.stdout + done.stderr
    assert "candidate prefix-cache (required): PASS" in done.stdout, done.stdout
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("report: "))
    envelope = Path(line.split(": ", 1)[1].strip())
    verified = qgate(
        "verify",
        str(envelope),
        *("--pubkey", str(tmp_path / "k.pub.pem"), "--profile", str(profile)),
        env=env,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "reuse-pass answers re-derived" in verified.stdout
    shown = json.loads(qgate("show", str(envelope), "--format", "json", env=env).stdout)
    reports = {c["name"]: c["report"] for c in shown["candidates"]}

    cached = reports["prefix-cache"]
    for suite in ("math.long", "recall.384"):
        cand = _warm(cached, "candidate", suite)
        got = shares(cand["before"], cand["after"])  # type: ignore[arg-type]
        assert got.device is not None and got.device >= 0.5, (suite, got)
        ref = _warm(cached, "reference", suite)
        assert shares(ref["before"], ref["after"]).device == 0.0  # type: ignore[arg-type]
    gates = {v["gate"]: v for v in cached["quality"]["verdicts"]}
    assert gates["math.long@warm.exercised"]["passed"] is True
    flips = gates["math.long@warm.self_flips"]
    assert flips["passed"] is True and "reference lost" in flips["reason"]  # both sides' flips

    plain = reports["no-cache"]
    warm = [v for v in plain["quality"]["verdicts"] if "@warm." in v["gate"]]
    assert warm and all(v["passed"] is False and v["exercised"] is False for v in warm)
    assert plain["verdict"] == "FAIL"
    md = render_markdown(Report.model_validate(plain))
    assert "NOT EXERCISED math.long@warm" in md and "| NOT EXERCISED |" in md
    assert "Reuse passes: what served the prompts" in md
    assert "GateNotExercised" in (envelope.parent / "junit.xml").read_text()
