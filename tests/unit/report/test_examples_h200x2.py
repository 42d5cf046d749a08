"""The signed MoE previews measured on two lent H200s (examples/h200x2/) verify here, without a GPU.

Qwen3-30B-A3B's shape with vLLM dummy weights at tensor_parallel_size 2 + expert parallel, BF16
against FP8 weights + FP8 KV, run twice on fresh machines (the folder without a suffix, and -r2).
Each folder holds the report, its Markdown view and the exact profile file that ran; the key is
examples/h200x2/signing-key.pub.pem (the same key as examples/h200/; its private half never left
the machines that signed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.examples import predicate_of, verify_example

ROOT = Path(__file__).resolve().parents[3]
H200X2 = ROOT / "examples" / "h200x2"
PUBKEY = H200X2 / "signing-key.pub.pem"
RUNS = ["qwen3-moe-30b-a3b-shape-h200x2-preview", "qwen3-moe-30b-a3b-shape-h200x2-preview-r2"]


def _verify(name: str, profile: Path | None = None) -> tuple[int, str]:
    folder = H200X2 / name
    return verify_example(folder, PUBKEY, profile)


def _predicate(name: str) -> dict[str, Any]:
    return predicate_of(H200X2 / name / "report.intoto.jsonl")


@pytest.mark.parametrize("name", RUNS)
def test_moe_preview_report_verifies(name: str) -> None:
    code, out = _verify(name)
    assert code == 0, out
    assert "embedded profile equals profile.yaml" in out
    assert "2 perf scenarios recomputed" in out
    assert "(verdict PREVIEW)" in out


def test_the_committed_profile_is_the_shipped_one() -> None:
    shipped = ROOT / "precision_profiles" / f"{RUNS[0]}.yaml"
    for name in RUNS:
        assert (H200X2 / name / "profile.yaml").read_bytes() == shipped.read_bytes()


def test_a_report_is_rejected_against_the_one_gpu_profile() -> None:
    # the same model shape on one H200: every key that differs (TP, EP, scenarios) must be caught
    one_gpu = ROOT / "precision_profiles" / "qwen3-moe-30b-a3b-shape-h200-preview.yaml"
    code, out = _verify(RUNS[0], one_gpu)
    assert code != 0
    assert "differs from" in out


@pytest.mark.parametrize("name", RUNS)
def test_moe_preview_ran_tensor_and_expert_parallel_on_two_gpus(name: str) -> None:
    rep = _predicate(name)
    ref, cand = rep["effective_configs"]
    for side in (ref, cand):
        assert side["tensor_parallel_size"] == 2
        assert "--enable-expert-parallel" in side["command"]
        assert side["command"][side["command"].index("--load-format") + 1] == "dummy"
        assert side["env_flags"]["NCCL_NVLS_ENABLE"] == "0"  # NVLink multicast stayed off
    assert (ref["dtype"], ref["quantization"], ref["kv_cache_dtype"]) == ("bfloat16", None, "auto")
    assert (cand["quantization"], cand["kv_cache_dtype"]) == ("fp8", "fp8")
    assert cand["linear_kernels"] == {
        "Fp8PerTensorOnlineLinearMethod": "CutlassFP8ScaledMMLinearKernel"
    }
    assert rep["fingerprint"]["accelerators"][0]["count"] == 2
    assert rep["fingerprint"]["accelerators"][0]["model"] == "NVIDIA H200"


@pytest.mark.parametrize("name", RUNS)
def test_moe_preview_figures_are_per_gpu_and_the_seeds_workloads(name: str) -> None:
    runs = _predicate(name)["perf"]["runs"]
    by = {(r["role"], r["scenario"]): r for r in runs}
    assert set(by) == {
        (role, s) for role in ("reference", "candidate") for s in ("agent-4", "prefill-8k")
    }
    for (_, scenario), run in by.items():
        assert run["gpus"] == 2
        ok = [r for r in run["requests"] if not r["error"]]
        if scenario == "agent-4":  # 4 conversations x 8 turns over an 8192-token shared prefix
            assert len(ok) == 32
            assert {r["conversation"] for r in ok} == {0, 1, 2, 3}
            assert min(r["prompt_tokens"] for r in ok) > 8192
        else:  # 5 measured single requests, 8192 in / 256 out
            assert len(ok) == 5
            assert {(r["prompt_tokens"], r["output_tokens"]) for r in ok} == {(8192, 256)}
    for result in _predicate(name)["perf"]["results"]:
        for role in ("reference", "candidate"):
            figures = result[role]
            assert figures["output_throughput_per_gpu"] == pytest.approx(
                figures["output_throughput"] / 2
            )
            for metric in ("ttft_ms", "request_output_tok_s", "request_decode_tok_s"):
                assert figures[metric]["count"] == figures["completed"]
