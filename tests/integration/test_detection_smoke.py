"""The detection benchmark's smoke path for real (issue 41): one fault and one A/A of
perf/bench_detection.py's proxy chunk, in front of the session's `reference_server`, nothing
started (`--upstream`: no server of its own, the vLLM lock not taken).

`load-100` corrupts every answer that arrives with more than 2 requests in flight (the
quality suites ask 8 at once): qgate FAILs it, its exact McNemar test among the gates (harm
shown, not only a point estimate past the line); `aa-proxy` is the proxy path with no rule
firing: qgate does not fail it (the proxy chunk asks no life probes: the perf chunk does).
Each row also carries the peers' verdicts on the same per-item records.

Judged as a rollout would be where numerics vary with the batch (issues 53 and 56):
`--rule bound`, so a max_drop PASSes only on a bound within its margin, FAILs only on harm
shown and is INCONCLUSIVE otherwise. On the Intel AMX kind (bf16) the one server answers
4.3% of the demo's items differently when their batch changes (docs/measurements.md), and the
A/A rides in other batches than the reference's; under the point rule one such flip on a
small suite was a FAIL by chance, and CI failed on it (at 32 items as at 4). Under the bound
noise can make the A/A INCONCLUSIVE, never FAIL: the expectation is "not FAIL, nothing
failed". The fault loses 6-8 of 32 math items (7 on the AVX2-only EPYC, 2026-12-06), and 6
of the 12 of each structured-output parameter (the 12 a 25-point margin needs to be shown at
all: fewer can never PASS, validate refuses them); their exact McNemar tests FAIL it. Left out
for CI time (`--skip tool_calls,math.long`): the tool-call suites took 41 s of a side's 96 s
(AVX2-only EPYC, alone: the module 383 s with them; tests/integration/test_suites.py asks them
of real vLLM), and the long math form behind its 1,024-token preamble 22-33 s a side (it lost
the same 7 of 32 as the short form).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qgate.runtime.vllm_server import VllmServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RULES = {"nemo_wald", "vllm_rtol", "unpaired_z", "absolute_floor", "mlperf_99"}
THRESHOLD = RULES - {"nemo_wald"}


def test_one_fault_and_one_aa_through_the_bench(
    reference_server: VllmServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    argv = [sys.executable, str(ROOT / "perf" / "bench_detection.py"), "--chunks", "proxy"]
    argv += ["--only", "load-100,aa-proxy", "--proxy-items", "32", "--rule", "bound"]
    argv += ["--skip", "tool_calls,math.long"]
    argv += ["--upstream", reference_server.base_url, "--work", str(tmp_path / "work")]
    argv += ["--out", str(out)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("GITHUB_STEP_SUMMARY", None)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, check=False)
    wall = time.perf_counter() - start
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records = json.loads((out / "proxy.json").read_text())
    assert records.get("upstream") == "given" and records["lock_wait_s"] == 0.0
    rows = records["candidates"]
    assert set(rows) == {"load-100", "aa-proxy"}
    fault, aa = rows["load-100"], rows["aa-proxy"]
    assert fault["verdict"] == "FAIL" and fault["failed_gates"], fault
    assert any(g.endswith(".significance") for g in fault["failed_gates"]), fault
    assert aa["verdict"] in ("PASS", "INCONCLUSIVE"), (aa["failed_gates"], aa)
    assert aa["failed_gates"] == [], (aa["failed_gates"], aa)
    assert (aa["verdict"] == "INCONCLUSIVE") == bool(aa["inconclusive_gates"]), aa
    # the proxy chunk skips perf and asks no life probes (the perf chunk does): 4 probe
    # answers alone could never show the pooled envelope's margin, so nothing is pooled
    assert aa["life_probes"] == [] and aa["envelope"] == [], aa
    # each proxy's log read back: the load fault's corrupted answers matched to graded items
    # by prompt digest (issue 53), the A/A proxy acting on none
    acts = fault["fault_acts"]
    assert 0 < acts["graded"] <= acts["acted"] <= acts["requests"], acts
    assert aa["fault_acts"]["acted"] == 0 and aa["fault_acts"]["requests"] > 0, aa["fault_acts"]
    for row in (fault, aa):
        assert row["suites"], row
        for suite in row["suites"].values():
            assert set(suite["rules"]) == RULES and suite["n"] > 0
            assert set(suite["items_needed"]) == THRESHOLD | {"qgate_mcnemar"}
    table = (out / "table.md").read_text()
    assert "| load | all answers above 2 in flight | **FAIL** |" in table
    assert any(
        f"| A/A | through the proxy, no rule fires | {mark} |" in table
        for mark in ("pass", "inconclusive")
    ), table
    assert "False alarms over the benign runs (proxy): qgate new (bound) 0/1" in table
    assert "with no server of its own (an upstream already running)" in table
    assert "Noise floor on this CPU kind" in table
    print(f"detection smoke: {wall:.0f} s (qgate run {records['wall_s']:.0f} s)")
