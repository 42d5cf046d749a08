"""engine.uncalibrated_kv_scales: fail -> a failing gate, in every view, recomputed by verify."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from helpers.report_synthetic import PROFILE, build_report, cache_provenance, make_signer

from qgate.attest.statement import Subject
from qgate.core.serving import EffectiveConfig
from qgate.errors import VerificationFailed
from qgate.gates.judgement import Evidence
from qgate.gates.quality import evaluate_quality
from qgate.gates.scales import kv_scale_verdicts
from qgate.profile import Profile
from qgate.report.assemble import build_report as assemble
from qgate.report.inputs import ReportInputs
from qgate.report.model import Report
from qgate.report.render.junit import render_junit
from qgate.report.render.md import render_markdown
from qgate.report.signing import sign_report
from qgate.report.verify.single import verify_bytes

WARN = "Using KV cache scaling factor 1.0 for fp8_e4m3. If this is unintended, verify ..."


def _configs() -> list[EffectiveConfig]:
    common: dict[str, Any] = {"kind": "vllm", "base_url": "http://h:1/v1", "served_model": "m"}
    return [
        EffectiveConfig(role="reference", kv_cache_dtype="auto", **common),
        EffectiveConfig(
            role="candidate",
            kv_cache_dtype="fp8",
            uncalibrated_scales=["k", "v"],
            engine_warnings=[WARN],
            **common,
        ),
    ]


def _report(policy: str) -> Report:
    raw = build_report(items=10)
    data: dict[str, Any] = copy.deepcopy(PROFILE)
    data.setdefault("engine", {})["uncalibrated_kv_scales"] = policy
    profile = Profile.model_validate(data)
    configs = _configs()
    verdicts = evaluate_quality(profile.quality, raw.quality.runs, raw.quality.divergence)
    verdicts += kv_scale_verdicts(profile.engine.uncalibrated_kv_scales, configs)
    # no perf records here: a passed run skipped its perf stage (a run whose perf ran holds them)
    passed = all(v.passed for v in verdicts)
    status = "skipped: --skip-perf" if passed else "skipped: gates failed"
    return assemble(
        ReportInputs(
            profile=profile,
            profile_sha256="0" * 64,
            fingerprint=None,
            evidence=Evidence(
                configs=tuple(configs),
                runs=tuple(raw.quality.runs),
                divergence=raw.quality.divergence,
                status=status,  # type: ignore[arg-type]
            ),
            verdicts=tuple(verdicts),
            stage_timings={},
            reference_provenance=cache_provenance(),
        )
    )


def _verify(report: Report) -> None:
    signer = make_signer("ecdsa")
    data = sign_report(report, [Subject(name="profile/p.yaml", sha256="0" * 64)], signer)
    verify_bytes(data, signer.public_pem)


def test_fail_policy_fails_the_run_and_shows_everywhere() -> None:
    report = _report("fail")
    assert report.verdict == "FAIL"
    gate = report.quality.verdicts[-1]
    assert gate.gate == "candidate.kv_scales_calibrated" and not gate.passed
    _verify(report)
    md, junit = render_markdown(report), render_junit(report)
    assert "FAILED candidate.kv_scales_calibrated" in md
    assert f"ENGINE WARNING candidate: {WARN}" in md
    assert 'name="candidate.kv_scales_calibrated"' in junit


def test_warn_policy_passes_with_the_warning_in_the_report() -> None:
    report = _report("warn")
    assert all(v.gate != "candidate.kv_scales_calibrated" for v in report.all_verdicts())
    assert f"ENGINE WARNING candidate: {WARN}" in render_markdown(report)
    _verify(report)


def test_verify_rejects_a_dropped_or_flipped_kv_scale_gate() -> None:
    report = _report("fail")
    report.quality.verdicts[-1].passed = True
    with pytest.raises(VerificationFailed, match="kv_scales_calibrated"):
        _verify(report)
    report = _report("fail")
    report.quality.verdicts.pop()
    with pytest.raises(VerificationFailed):
        _verify(report)
