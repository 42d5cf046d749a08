"""What qgate reads from vLLM 0.26 on CUDA: logs captured on the lent H200 (SmolLM2, 2026-11-30)."""

from __future__ import annotations

from pathlib import Path

from qgate.core.serving import EffectiveConfig
from qgate.runtime.effective import check_applied, engine_facts, parse_engine_log

FIXTURES = Path(__file__).with_name("fixtures")
FP8 = (FIXTURES / "vllm026_h200_fp8.log").read_text()
BF16 = (FIXTURES / "vllm026_h200_bf16.log").read_text()


def test_fp8_candidate_log_gives_backend_fa_version_kernel_and_scale_warnings() -> None:
    facts = engine_facts(parse_engine_log(FP8))
    assert facts["engine_version"] == "0.26.0"
    assert (facts["dtype"], facts["quantization"], facts["kv_cache_dtype"]) == (
        "bfloat16",
        "fp8",
        "fp8",
    )
    assert facts["attention_backend"] == "FLASH_ATTN"
    assert facts["flash_attn_version"] == 3
    assert facts["linear_kernels"] == {
        "Fp8PerTensorOnlineLinearMethod": "CutlassFP8ScaledMMLinearKernel"
    }
    assert facts["uncalibrated_scales"] == ["k", "v", "q", "prob"]
    assert facts["engine_warnings"] == [
        "Checkpoint does not provide a q scaling factor. Setting it to k_scale. This only "
        "matters for FP8 Attention backends (flash-attn or flashinfer).",
        "Using KV cache scaling factor 1.0 for fp8_e4m3. If this is unintended, verify that "
        "k/v_scale scaling factors are properly set in the checkpoint.",
        "Using uncalibrated q_scale 1.0 and/or prob_scale 1.0 with fp8 attention. This may "
        "cause accuracy issues. Please make sure q/prob scaling factors are available in the "
        "fp8 checkpoint.",
    ]
    assert check_applied({"quantization": "fp8", "kv_cache_dtype": "fp8"}, facts) == []
    # the facts are exactly EffectiveConfig's fields
    EffectiveConfig(
        role="candidate", kind="vllm", base_url="http://h/v1", served_model="m", **facts
    )


def test_bf16_reference_log_has_fa3_and_no_fp8_facts() -> None:
    facts = engine_facts(parse_engine_log(BF16))
    assert (facts["quantization"], facts["kv_cache_dtype"]) == (None, "auto")
    assert facts["attention_backend"] == "FLASH_ATTN"
    assert facts["flash_attn_version"] == 3
    assert facts["linear_kernels"] == {}
    assert facts["uncalibrated_scales"] == []
    assert facts["engine_warnings"] == []


def test_each_scale_warning_names_its_scales_and_is_recorded_once() -> None:
    kv = (
        "(EngineCore pid=1) WARNING 11-30 13:55:07 [kv_cache.py:151] Using KV cache scaling "
        "factor 1.0 for fp8_e4m3. If this is unintended, verify ..."
    )
    report = parse_engine_log(kv + "\n" + kv + "\n")
    assert report.uncalibrated_scales == ["k", "v"]
    assert report.warnings == [
        "Using KV cache scaling factor 1.0 for fp8_e4m3. If this is unintended, verify ..."
    ]
    q_only = "WARNING [kv_cache.py:190] Using uncalibrated q_scale 1.0 and/or prob_scale 0.5 with"
    assert parse_engine_log(q_only).uncalibrated_scales == ["q"]
    calibrated = "WARNING [kv_cache.py:190] Using uncalibrated q_scale 0.02 and/or prob_scale 1.0"
    assert parse_engine_log(calibrated).uncalibrated_scales == ["prob"]


def test_rocm_backend_line_and_no_fa_line() -> None:
    log = (
        "(EngineCore pid=7) INFO 11-30 [rocm.py:300] Using ROCM_AITER_FA attention backend out "
        "of potential backends: ['ROCM_AITER_FA', 'TRITON_ATTN'].\n"
        "(EngineCore pid=7) INFO 11-30 [__init__.py:635] Selected AiterScaledMMLinearKernel for "
        "Fp8LinearMethod\n"
    )
    facts = engine_facts(parse_engine_log(log))
    assert facts["attention_backend"] == "ROCM_AITER_FA"
    assert facts["flash_attn_version"] is None
    assert facts["linear_kernels"] == {"Fp8LinearMethod": "AiterScaledMMLinearKernel"}
