"""A dummy-weights preview through `qgate run` on vLLM-CPU: speed only, verdict PREVIEW, exit 0.

SmolLM2's config and tokenizer without its weights (vLLM `load_format: dummy`),
reference and candidate differing in a scheduler limit that every CPU supports.
No quality suite runs; a perf gate still does; the report verifies.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

QGATE = [sys.executable, "-m", "qgate.cli"]

PROFILE = """
name: it-preview
model: {{path: {model}, served_name: smollm2-shape}}
target: {{accelerator: cpu}}
engine:
  cpu_dtype: auto
  args: {{load_format: dummy, max_model_len: 1024, enforce_eager: true}}
  env: {{VLLM_CPU_KVCACHE_SPACE: "1"}}
  startup_timeout_s: 600
reference:
  args: {{max_num_seqs: 16}}
candidate:
  args: {{max_num_seqs: 4}}
perf:
  scenarios:
    - {{name: fixed, input_tokens: 64, output_tokens: 8, concurrency: 2, warmup: 1, requests: 6}}
  gates:
    - {{metric: tpot_ms.p50, max_ratio: 50}}
"""


def test_dummy_weights_preview_runs_speed_only(tmp_path: Path, smollm2_checkpoint: Path) -> None:
    model = tmp_path / "smollm2-shape"
    model.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(smollm2_checkpoint / name, model / name)
    profile = tmp_path / "preview.yaml"
    profile.write_text(PROFILE.format(model=model))
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run(
        [
            *QGATE,
            "run",
            str(profile),
            "--out",
            str(tmp_path / "runs"),
            "--no-progress",
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert done.stdout.startswith("PREVIEW (dummy weights: speed only): 3/3 gates passed"), out
    run_dir = next((tmp_path / "runs").iterdir())
    assert not (run_dir / "raw" / "reference-quality.json").exists()
    md = (run_dir / "report.md").read_text()
    assert "**Verdict: PREVIEW (dummy weights: speed only)**" in md
    assert "perf.fixed.tpot_ms.p50.max_ratio" in md
    pub = next(p for p in done.stdout.split() if p.endswith(".pub.pem"))
    verified = subprocess.run(
        [
            *QGATE,
            "verify",
            str(run_dir / "report.intoto.jsonl"),
            "--pubkey",
            pub,
            "--profile",
            str(profile),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "verdict PREVIEW" in verified.stdout
