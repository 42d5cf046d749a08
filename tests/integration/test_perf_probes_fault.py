"""A candidate right when lightly loaded, wrong under concurrency, FAILed by the perf probes;
and wrong on the first request after an idle pause, FAILed by its life's idle probe.

Issue 44's first "done when", on real vLLM (CPU, SmolLM2): the candidate is the reference's
own model and arguments behind perf/faults/launch.py with a `load:6` fault (answers
corrupted, digits and letters rotated, only when more than 6 requests are in flight). The
quality stage asks 4 at a time, below the threshold, so every quality gate passes; the perf
scenario's c12 level runs above it, so its graded probes come back wrong and its probe gate
fails, while its c1 level's pass. The same proxy also has an `idle:20` fault (issue 44 item
2, vLLM #52150): only a request that arrives after 20 s with nothing in flight is corrupted.
No quality request waits that long (the start probes and the quality stage follow the start
at once); the candidate life's idle probes do: asked before its perf block, once it has sat
through the reference's block and the rest of `lives.idle_s` 22 s, the first of them comes
back wrong: that life FAILs, named, and its round is kept out of the ratios. The reference's
pause runs on through them and the candidate's block. One `qgate run`: one server start per
side, both at once; the lives (start and idle probes, and the part of the pause the
reference's block does not cover) add about 15 s to it. The pause is shorter than the demo's
(`idle_s` 30, the field's 20-50 s window) for CI time: what is proven is that the first request
after a pause of `idle_s` reaches the fault, whatever its length; 20 s keeps a margin over the
two sides' start skew (the candidate's proxy counts its quiet from its server's readiness, and
the start probes wait for both sides).
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QGATE = [sys.executable, "-m", "qgate.cli"]
LAUNCH = ROOT / "perf" / "faults" / "launch.py"

PROFILE = """
name: it-load-fault
model: {{embedded: smollm2}}
target: {{accelerator: cpu}}
engine:
  cpu_dtype: auto
  args: {{max_model_len: 2048, enforce_eager: true}}
  startup_timeout_s: 600
  preflight: never
reference:
  args: {{kv_cache_dtype: auto}}
candidate:
  args: {{kv_cache_dtype: auto}}
  engine:
    launcher: [{python}, {launch}, --fault, "load:6", --fault, "idle:20", --share, "1",
               --log, {log}, --]
quality:
  concurrency: 4             # below the fault's threshold: the quality stage never trips it
  math: {{prompts: [short], limit: 24, max_drop: 0.2}}
lives: {{probes: 4, idle_s: 22}}  # the idle fault's 20 s, and then some
perf:
  blocks: 1
  probes: {{items: 6}}       # the defaults otherwise: max_flips 1, exact McNemar at 0.05
  scenarios:
    - {{name: chat, input_tokens: 32, output_tokens: 8, concurrency: [1, 12], warmup: 0,
        requests: 24}}
"""


def _statement(path: Path) -> dict[str, Any]:
    envelope = json.loads(path.read_text().splitlines()[0])
    payload: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return payload["predicate"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def fault_run(
    tmp_path_factory: pytest.TempPathFactory, smollm2_checkpoint: Path
) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    work = tmp_path_factory.mktemp("probes-fault")
    log = work / "fault.jsonl"
    profile = work / "load-fault.yaml"
    profile.write_text(PROFILE.format(python=sys.executable, launch=LAUNCH, log=log))
    # 1 GiB of KV cache per server (tests/integration/conftest.py: KV_SPACE)
    env = dict(os.environ, XDG_CONFIG_HOME=str(work / "config"), VLLM_CPU_KVCACHE_SPACE="1")
    env.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run(
        [*QGATE, "keygen", "--out", str(work / "k")], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    args = ["--out", str(work / "runs"), "--key", str(work / "k.pem")]
    done = subprocess.run(
        [*QGATE, "run", str(profile), *args, "--cache-dir", str(work / "cache"), "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("report: ")), None)
    assert line is not None, done.stdout + done.stderr
    report = Path(line.split(": ", 1)[1].strip())
    verified = subprocess.run(
        [*QGATE, "verify", str(report), "--pubkey", str(work / "k.pub.pem")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return done, report, log


def test_quality_passes_and_the_loaded_scenario_probes_fail(
    fault_run: tuple[subprocess.CompletedProcess[str], Path, Path],
) -> None:
    done, report, log = fault_run
    assert done.returncode == 1, done.stdout + done.stderr
    pred = _statement(report)
    assert pred["verdict"] == "FAIL"
    quality = pred["quality"]["verdicts"]
    assert quality and all(v["passed"] for v in quality), quality
    assert pred["perf"]["status"] == "ran"
    gates = {
        v["gate"]: v
        for r in pred["perf"]["results"]
        for v in r["verdicts"]
        if ".probes." in v["gate"]
    }
    assert not gates["perf.chat@c12.probes.max_flips"]["passed"], gates
    assert gates["perf.chat@c12.probes.max_flips"]["observed"] >= 2
    assert gates["perf.chat@c1.probes.max_flips"]["passed"], gates
    lives = {v["gate"]: v for v in pred["lives"]["verdicts"]}
    failed = [v["gate"] for v in [*quality, *gates.values(), *lives.values()] if not v["passed"]]
    assert all(
        g.startswith("perf.chat@c12.probes.") or (g.startswith("lives.") and g.endswith(".idle"))
        for g in failed
    ), failed
    # every corrupted answer fell in the perf stage (the quality stage never had 6 in flight)
    # or was the first request after the idle pause
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert any(e.get("corrupted") for e in entries)
    assert any("idle" in (e.get("corrupted") or "") for e in entries)
    md = (report.parent / "report.md").read_text()
    assert "PROBES FAILED in chat@c12" in md and "Graded probes under load" in md
    assert "chat@c12: ratios withheld (its graded probes failed)" in done.stdout


def test_the_idle_fault_fails_the_candidate_life_by_its_idle_probe(
    fault_run: tuple[subprocess.CompletedProcess[str], Path, Path],
) -> None:
    done, report, _ = fault_run
    pred = _statement(report)
    lives = pred["lives"]
    verdicts = {v["gate"]: v for v in lives["verdicts"]}
    # one verdict per candidate life and kind; the reference's lives set the floor
    assert sorted(verdicts) == ["lives.candidate.2.idle", "lives.candidate.2.start"], verdicts
    assert verdicts["lives.candidate.2.start"]["passed"], verdicts
    idle = verdicts["lives.candidate.2.idle"]
    assert not idle["passed"] and idle["observed"] >= 1, idle
    assert re.search(r"candidate life 2 \(round 1\) after (2[2-9]|[3-9]\d) s idle", idle["reason"])
    kinds = [(r["side"], r["kind"]) for r in lives["records"]]
    assert sorted(kinds) == sorted(
        [
            ("reference", "start"),
            ("candidate", "start"),
            ("reference", "idle"),
            ("candidate", "idle"),
        ]
    )
    assert all(r["idle_s"] >= 22 for r in lives["records"] if r["kind"] == "idle")
    # the first request after the pause was the candidate's first idle probe: lost
    first = next(r for r in lives["records"] if (r["side"], r["kind"]) == ("candidate", "idle"))
    assert first["requests"][0]["probe_id"] in idle["reason"], idle
    # the failed life's round is in no ratio; its records stay
    assert lives["excluded_rounds"] == [0]
    assert all(r["comparisons"] == [] for r in pred["perf"]["results"])
    assert pred["perf"]["runs"]
    assert "round(s) 1 kept out of the ratios" in done.stdout
    md = (report.parent / "report.md").read_text()
    assert re.search(r"LIFE FAILED: candidate life 2 \(round 1\) after \d+ s idle", md), md
