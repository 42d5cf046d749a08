"""Perf rounds in a signed report: verify re-derives the round ratios and their interval, and
rejects an edited round ratio or records that lack a round the profile asks for."""

from __future__ import annotations

import pytest
from helpers.report_synthetic import build_report, make_signer

from qgate.attest.statement import Subject
from qgate.errors import VerificationFailed
from qgate.perf.gates import report_gates
from qgate.perf.records import RequestRecord
from qgate.profile import Profile
from qgate.report.assemble import perf_results
from qgate.report.model import Report
from qgate.report.signing import sign_report
from qgate.report.verify.single import default_recompute, verify_bytes

SIGNER = make_signer("ecdsa")


def verify(report: Report) -> None:
    subjects = [Subject(name="profile/p.yaml", sha256=report.profile_sha256)]
    envelope = sign_report(report, subjects, SIGNER)
    verify_bytes(envelope, SIGNER.public_pem, recompute=default_recompute())


def _stretched(request: RequestRecord, factor: float) -> RequestRecord:
    """The request with its token gaps `factor` times as long."""
    first = request.token_times_ns[0]
    times = [first + int((t - first) * factor) for t in request.token_times_ns]
    return request.model_copy(update={"token_times_ns": times, "done_ns": times[-1] + 1_000})


def _rounds_report(rounds: int = 2, held: int | None = None) -> Report:
    """build_report's run measured again in `held` (default `rounds`) rounds, the candidate a
    little slower in each later round, its results derived as `qgate run` derives them."""
    report = build_report(requests=6, fns=default_recompute())
    report.profile["perf"]["rounds"] = rounds
    profile = Profile.model_validate(report.profile)
    ref, cand = report.perf.runs
    runs = [ref, cand]
    for k in range(1, rounds if held is None else held):
        slower = [_stretched(q, 1 + 0.1 * k) for q in cand.requests]
        runs += [
            ref.model_copy(update={"round": k}),
            cand.model_copy(update={"round": k, "requests": slower}),
        ]
    perf = report.perf
    perf.runs = runs
    perf.results = perf_results(
        profile.perf, runs, resamples=perf.bootstrap_resamples, seed=perf.bootstrap_seed
    )
    perf.gates = report_gates(profile.perf, perf.status, perf.results)
    return report


def _row(report: Report, metric: str) -> dict:  # type: ignore[type-arg]
    return next(c for c in report.perf.results[0].comparisons if c["metric"] == metric)


def test_a_report_with_rounds_verifies_and_holds_the_round_ratios() -> None:
    report = _rounds_report(rounds=3)
    itl = _row(report, "itl_ms.p50")
    assert itl["rounds"] == 3 and len(itl["round_ratios"]) == 3
    assert itl["round_ratios"][0] < itl["round_ratios"][1] < itl["round_ratios"][2]
    assert (
        itl["round_ci_low"] < itl["round_ratios"][0] < itl["round_ratios"][2] < itl["round_ci_high"]
    )
    assert itl["ci_low"] <= itl["round_ci_low"] and itl["ci_high"] >= itl["round_ci_high"]
    verify(report)


@pytest.mark.parametrize("key", ["round_ratios", "round_ci_high", "ci_low"])
def test_an_edited_round_figure_is_rejected(key: str) -> None:
    report = _rounds_report()
    row = _row(report, "itl_ms.p50")
    if key == "round_ratios":
        row[key] = [row[key][0], row[key][1] * 0.9]
    else:
        row[key] *= 1.01
    with pytest.raises(VerificationFailed, match="short: comparisons"):
        verify(report)


def test_records_without_a_round_the_profile_asks_for_are_rejected() -> None:
    report = _rounds_report(rounds=3, held=2)  # consistent figures, one round short
    with pytest.raises(VerificationFailed, match=r"round\(s\) \[0, 1\], the run asks 3"):
        verify(report)


def test_one_round_needs_no_round_fields_in_the_runs() -> None:
    report = build_report(requests=4, fns=default_recompute())
    assert all(run.round == 0 for run in report.perf.runs)
    assert _row(report, "ttft_ms.p50")["rounds"] == 1
    verify(report)
