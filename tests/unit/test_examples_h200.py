"""The signed reports measured on the lent H200 (examples/h200/) verify here, without a GPU.

Each folder holds the report, its Markdown view and the exact profile file that ran (the
profile is a subject of the signed Statement). The key is examples/h200/signing-key.pub.pem
(its private half never left the machines that signed).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from click.testing import CliRunner

from qgate.cli.main import main

H200 = Path(__file__).resolve().parents[2] / "examples" / "h200"
PUBKEY = H200 / "signing-key.pub.pem"


def _verify(name: str) -> tuple[int, str]:
    folder = H200 / name
    result = CliRunner().invoke(
        main,
        ["verify", str(folder / "report.intoto.jsonl"), "--pubkey", str(PUBKEY),
         "--profile", str(folder / "profile.yaml")],
    )  # fmt: skip
    return result.exit_code, result.output


def _predicate(name: str) -> dict:  # type: ignore[type-arg]
    line = (H200 / name / "report.intoto.jsonl").read_text()
    return json.loads(base64.b64decode(json.loads(line)["payload"]))["predicate"]


def test_preview_report_verifies_and_its_fail_verdict_follows() -> None:
    code, out = _verify("llama3-8b-shape-h200-preview")
    assert code == 0, out
    assert "embedded profile equals profile.yaml" in out
    assert "6 perf gates recomputed" in out
    assert "(verdict FAIL)" in out  # one perf gate (c1 TTFT p99) missed on its interval


def test_preview_report_records_what_ran_on_the_h200() -> None:
    rep = _predicate("llama3-8b-shape-h200-preview")
    ref, cand = rep["effective_configs"]
    assert cand["command"][1:3] == ["serve", ref["command"][2]]  # `vllm serve MODEL`
    assert cand["linear_kernels"] == {
        "Fp8PerTensorOnlineLinearMethod": "CutlassFP8ScaledMMLinearKernel"
    }
    assert ref["flash_attn_version"] == cand["flash_attn_version"] == 3
    assert cand["uncalibrated_scales"] == ["k", "v", "q", "prob"] and ref["engine_warnings"] == []


def test_smollm2_report_verifies_on_the_figures_it_stores() -> None:
    # made before the perf derivation grew (decode rate, throughput intervals): verify holds it
    # to every figure it stores, and does not ask for those it could not have
    code, out = _verify("smollm2-h200-fp8")
    assert code == 0, out
    rep = _predicate("smollm2-h200-fp8")
    assert rep["verdict"] == "PASS" and len(rep["quality"]["verdicts"]) == 9
    assert "derivation" not in rep["perf"]
