"""The signed reports measured on the lent H200 (examples/h200/) verify here, without a GPU.

Each folder holds the report, its Markdown view and the exact profile file that ran (the
profile is a subject of the signed Statement). The 8B-shape preview (2026-11-30) is signed by
examples/h200/signing-key.pub.pem, the SmolLM2 FP8 run (refreshed 2026-12-01, schema 2) by
examples/h200/signing-key-2026-12-01.pub.pem (their private halves never left the machines
that signed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.examples import predicate_of, verify_example

H200 = Path(__file__).resolve().parents[3] / "examples" / "h200"
PUBKEY = H200 / "signing-key.pub.pem"
PUBKEY_2026_12_01 = H200 / "signing-key-2026-12-01.pub.pem"
KEYS = {"llama3-8b-shape-h200-preview": PUBKEY, "smollm2-h200-fp8": PUBKEY_2026_12_01}


def _verify(name: str, pubkey: Path | None = None) -> tuple[int, str]:
    folder = H200 / name
    return verify_example(folder, pubkey or KEYS[name])


def _predicate(name: str) -> dict[str, Any]:
    return predicate_of(H200 / name / "report.intoto.jsonl")


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


def test_smollm2_report_verifies_with_every_check_of_the_current_schema() -> None:
    # refreshed on the H200 with schema 2 (9cf3e66): verify re-derives the perf figures from the
    # stored requests (perf derivation 5) and the quality verdicts with their eval-result fields
    code, out = _verify("smollm2-h200-fp8")
    assert code == 0, out
    for line in (
        "embedded profile equals profile.yaml",
        "296 item answers and correctness",
        "512 divergence positions re-derived",
        "9 quality verdicts recomputed",
        "3 perf scenarios recomputed",
        "(verdict PASS)",
    ):
        assert line in out, out
    rep = _predicate("smollm2-h200-fp8")
    assert rep["schema_version"] == "2" and rep["verdict"] == "PASS"
    assert rep["perf"]["derivation"] == 5 and rep["quality"]["derivation"] == 2
    assert rep["fingerprint"]["qgate_revision"] == "git archive 9cf3e66"
    verdicts = rep["quality"]["verdicts"]
    assert len(verdicts) == 9 and all(v["passed"] and v["settled"] for v in verdicts)
    assert all(v["n"] > 0 and "power" in v for v in verdicts)


def test_smollm2_report_records_one_life_per_runtime_and_three_perf_blocks() -> None:
    rep = _predicate("smollm2-h200-fp8")
    assert [(s["side"], s["purpose"]) for s in rep["starts"]] == [
        ("reference", "life"),
        ("candidate", "life"),
    ]
    assert all(s["ready_s"] > 0 and s["startup"]["weights_s"] > 0 for s in rep["starts"])
    assert rep["plan"]["blocks"] == 3
    assert sorted({r["block"] for r in rep["perf"]["runs"]}) == [0, 1, 2]
    cand = rep["effective_configs"][1]
    assert cand["linear_kernels"] == {
        "Fp8PerTensorOnlineLinearMethod": "CutlassFP8ScaledMMLinearKernel"
    }
    assert cand["uncalibrated_scales"] == ["k", "v", "q", "prob"]


def test_smollm2_report_does_not_verify_with_the_older_key() -> None:
    code, out = _verify("smollm2-h200-fp8", PUBKEY)
    assert code != 0 and "signature does not verify" in out, out
