"""A slower but accurate candidate fails a perf gate: verdict, exit code, every view, verify."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from helpers.report_synthetic import PROFILE, _requests, build_report, cache_provenance, make_signer

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.gates.judgement import Evidence
from qgate.gates.quality import evaluate_quality
from qgate.perf.records import ScenarioRun
from qgate.perf.salts import salt_scope
from qgate.profile import Profile
from qgate.report.assemble import build_report as assemble
from qgate.report.inputs import ReportInputs
from qgate.report.model import Report
from qgate.report.render.html import render_html
from qgate.report.render.junit import render_junit
from qgate.report.render.md import render_markdown
from qgate.report.signing import sign_report
from qgate.report.verify.single import verify_bytes

GATES = [
    {"metric": "tpot_ms.p50", "max_ratio": 1.1},
    {"metric": "output_throughput", "scenario": "short", "min_ratio": 1.0},
]


def _run(role: str, step_ms: float) -> ScenarioRun:
    # concurrency 1, back to back: the window is the requests' own time
    reqs = _requests(12, role, tokens=8, step=int(step_ms * 1e6))
    shift = 0
    for r in reqs:
        offset = shift - r.sent_ns
        r.scheduled_ns += offset
        r.sent_ns += offset
        r.first_token_ns = (r.first_token_ns or 0) + offset
        r.token_times_ns = [t + offset for t in r.token_times_ns]
        r.done_ns += offset
        shift = r.done_ns
    return ScenarioRun(
        scenario="short",
        role=role,
        kind="fixed",  # type: ignore[arg-type]
        params={"input_tokens": 32, "concurrency": 1, "cache_salt": salt_scope(role, 0, 0)},
        gpus=1,
        duration_ns=reqs[-1].done_ns - reqs[0].sent_ns,
        requests=reqs,
    )


def _report(cand_step_ms: float) -> tuple[Report, Profile]:
    raw = build_report(items=10)  # candidate loses one item of ten: within max_drop
    data: dict[str, Any] = copy.deepcopy(PROFILE)
    data["perf"]["gates"] = GATES
    data["perf"]["scenarios"][0]["requests"] = 12  # what each side measured
    profile = Profile.model_validate(data)
    verdicts = evaluate_quality(profile.quality, raw.quality.runs, raw.quality.divergence)
    assert verdicts and all(v.passed for v in verdicts)
    report = assemble(
        ReportInputs(
            profile=profile,
            profile_sha256="0" * 64,
            fingerprint=None,
            evidence=Evidence(
                runs=tuple(raw.quality.runs),
                divergence=raw.quality.divergence,
                status="ran",
                perf_runs=(_run("reference", 20), _run("candidate", cand_step_ms)),
            ),
            verdicts=tuple(verdicts),
            stage_timings={},
            reference_provenance=cache_provenance(),
        )
    )
    return report, profile


def _verify(report: Report) -> None:
    signer = make_signer("ecdsa")
    data = sign_report(report, [Subject(name="profile/p.yaml", sha256="0" * 64)], signer)
    verify_bytes(data, signer.public_pem)


def test_slower_but_accurate_candidate_fails_its_perf_gate() -> None:
    report, _ = _report(cand_step_ms=30)  # TPOT x1.5, output tok/s lower
    assert all(v.passed for v in report.quality.verdicts)
    assert report.verdict == "FAIL"
    by_gate = {v.gate: v for v in report.perf.gates}
    assert list(by_gate) == [
        "perf.short.tpot_ms.p50.max_ratio",
        "perf.short.output_throughput.min_ratio",
    ]
    tpot = by_gate["perf.short.tpot_ms.p50.max_ratio"]
    assert not tpot.passed and tpot.observed is not None and tpot.observed > 1.1
    assert not by_gate["perf.short.output_throughput.min_ratio"].passed
    assert tpot in report.all_verdicts()
    _verify(report)  # a failed gate is a result: the report still verifies

    md, junit, html = render_markdown(report), render_junit(report), render_html(report)
    assert "**Verdict: FAIL**" in md
    assert "FAILED perf.short.tpot_ms.p50.max_ratio: tpot_ms.p50 x1.500" in md
    assert '<testcase name="perf.short.tpot_ms.p50.max_ratio" classname="perf.short"' in junit
    assert 'failures="2"' in junit
    assert "FAILED perf.short.tpot_ms.p50.max_ratio" in html


def test_faster_candidate_passes_the_same_gates() -> None:
    report, _ = _report(cand_step_ms=15)
    assert [v.passed for v in report.perf.gates] == [True, True]
    assert report.verdict == "PASS"
    _verify(report)


def test_verify_rejects_a_perf_gate_flipped_to_pass() -> None:
    report, _ = _report(cand_step_ms=30)
    for v in report.perf.gates:
        v.passed = True
    report.verdict = "PASS"
    with pytest.raises(VerificationFailed, match=r"perf gates: gate perf\.short\.tpot_ms\.p50"):
        _verify(report)


def test_verify_rejects_a_dropped_perf_gate() -> None:
    report, _ = _report(cand_step_ms=30)
    report.perf.gates = []
    report.verdict = "PASS"
    with pytest.raises(VerificationFailed, match="is missing from the report"):
        _verify(report)


def _preview(cand_step_ms: float) -> Report:
    data: dict[str, Any] = copy.deepcopy(PROFILE)
    data["perf"]["scenarios"][0]["requests"] = 12  # what each side measured
    del data["quality"]
    data["model"] = {"path": "/models/llama3-8b-shape"}
    data["engine"] = {"args": {"load_format": "dummy"}}
    data["candidate"] = {"args": {"quantization": "fp8"}}
    data["perf"]["gates"] = GATES
    profile = Profile.model_validate(data)
    return assemble(
        ReportInputs(
            profile=profile,
            profile_sha256="0" * 64,
            fingerprint=None,
            evidence=Evidence(
                status="ran",
                perf_runs=(_run("reference", 20), _run("candidate", cand_step_ms)),
            ),
            verdicts=(),
            stage_timings={},  # a preview has no reference provenance
        )
    )


def test_preview_is_never_pass_and_says_speed_only() -> None:
    report = _preview(cand_step_ms=15)
    assert all(v.passed for v in report.all_verdicts()) and report.perf.gates
    assert report.verdict == "PREVIEW"
    _verify(report)
    md, junit, html = render_markdown(report), render_junit(report), render_html(report)
    assert "**Verdict: PREVIEW (dummy weights: speed only)**" in md
    assert 'value="PREVIEW (dummy weights: speed only)"' in junit
    assert "PREVIEW (dummy weights: speed only)</strong>" in html
    report.verdict = "PASS"
    with pytest.raises(VerificationFailed, match=r"overall verdict PASS .*\(PREVIEW\)"):
        _verify(report)


def test_preview_fails_a_missed_perf_gate() -> None:
    report = _preview(cand_step_ms=30)
    assert report.verdict == "FAIL"
    _verify(report)


def test_views_show_rates_per_gpu_and_ttft_p90() -> None:
    report, _ = _report(cand_step_ms=15)
    md = render_markdown(report)
    assert "| Out tok/s/GPU | Req/s | Req out tok/s p50 | Decode tok/s p50 | TTFT p90 ms |" in md
    cand = report.perf.results[0].candidate
    assert cand is not None
    # 7 tokens after the first, 15 ms apart: 66.67 tok/s decode rate
    assert cand["request_decode_tok_s"]["p50"] == pytest.approx(1000 / 15)
    row = next(line for line in md.splitlines() if line.startswith("| candidate | "))
    assert "| 66.67 |" in row
    for metric in (
        "ttft_ms.p90",
        "ttft_ms.p99",
        "request_decode_tok_s.p50",
        "output_throughput_per_gpu",
    ):
        assert f"| {metric} |" in md


def test_published_figure_beside_the_measured_one() -> None:
    report, _ = _report(cand_step_ms=15)
    report.profile["perf"]["published"] = [
        {
            "source": "InferenceX",
            "date": None,
            "hardware": "8xMI325X",
            "concurrency": 1,
            "metric": "output_throughput_per_gpu",
            "value": 10.0,
            "scenario": None,
            "note": "TP8",
        }
    ]
    md = render_markdown(report)
    assert "## Published figures (measured against published)" in md
    assert "hardware, software versions, model revision, workload and client may differ" in md
    cand = report.perf.results[0].candidate
    assert cand is not None
    ratio = cand["output_throughput_per_gpu"] / 10.0
    row = next(line for line in md.splitlines() if line.startswith("| InferenceX"))
    assert (
        "(date not recorded) | TP8 | 8xMI325X | 1 | output_throughput_per_gpu | 10 | short |" in row
    )
    assert f"x{ratio:.2f}" in row
