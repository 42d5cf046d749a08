"""Uncalibrated FP8 KV scales: warnings in every view, and the optional failing gate."""

from __future__ import annotations

import pytest

from qgate.core.serving import EffectiveConfig
from qgate.gates.scales import kv_scale_verdicts, quantized_kv, warning_lines
from qgate.profile import Profile

WARN = "Using KV cache scaling factor 1.0 for fp8_e4m3. If this is unintended, ..."


def _cfg(role: str, kv: str | None, scales: list[str], warnings: list[str]) -> EffectiveConfig:
    return EffectiveConfig(
        role=role,  # type: ignore[arg-type]
        kind="vllm",
        base_url="http://127.0.0.1:1/v1",
        served_model="m",
        kv_cache_dtype=kv,
        uncalibrated_scales=scales,
        engine_warnings=warnings,
    )


REF = _cfg("reference", "auto", [], [])
UNCAL = _cfg("candidate", "fp8", ["k", "v", "q"], [WARN])
CAL = _cfg("candidate", "fp8_e4m3", [], [])


def test_warn_policy_adds_no_gate_but_every_warning_is_a_line() -> None:
    assert kv_scale_verdicts("warn", [REF, UNCAL]) == []
    assert warning_lines([REF, UNCAL]) == [f"candidate: {WARN}"]


def test_fail_policy_fails_uncalibrated_and_passes_calibrated_fp8_kv() -> None:
    (bad,) = kv_scale_verdicts("fail", [REF, UNCAL])
    assert bad.gate == "candidate.kv_scales_calibrated" and not bad.passed
    assert (bad.observed, bad.limit) == (3.0, 0.0)
    assert "k=1.0, v=1.0, q=1.0" in bad.reason
    (good,) = kv_scale_verdicts("fail", [REF, CAL])
    assert good.passed and good.observed == 0.0


def test_only_quantized_kv_caches_are_gated() -> None:
    assert not quantized_kv(REF) and not quantized_kv(_cfg("reference", "bfloat16", [], []))
    assert quantized_kv(CAL) and quantized_kv(_cfg("candidate", "fp8_e5m2", [], []))
    assert kv_scale_verdicts("fail", [REF, _cfg("candidate", None, [], [])]) == []


def test_profile_option_defaults_to_warn_and_rejects_other_values() -> None:
    base = {"name": "t", "model": {"path": "/m"}, "candidate": {}, "quality": {"math": {}}}
    assert Profile.model_validate(base).engine.uncalibrated_kv_scales == "warn"
    strict = Profile.model_validate({**base, "engine": {"uncalibrated_kv_scales": "fail"}})
    assert strict.engine.uncalibrated_kv_scales == "fail"
    with pytest.raises(ValueError):
        Profile.model_validate({**base, "engine": {"uncalibrated_kv_scales": "error"}})


def test_settings_not_verified_are_lines_of_every_view() -> None:
    quiet = _cfg("candidate", "auto", [], []).model_copy(
        update={"not_verified": ["dtype: asked for 'float32'; not stated by the server"]}
    )
    assert warning_lines([REF, quiet]) == [
        "candidate: not verified: dtype: asked for 'float32'; not stated by the server"
    ]
