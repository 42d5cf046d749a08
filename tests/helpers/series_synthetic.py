"""The synthetic report with real perf figures and a time series on both sides."""

from __future__ import annotations

from helpers.report_synthetic import build_report

from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.verify.single import default_recompute


def series_report(bucket_s: float = 0.05, requests: int = 6) -> Report:
    """build_report with the real gate and perf functions, its runs asking for a series."""
    fns = default_recompute()
    report = build_report(requests=requests, fns=fns)
    for run in report.perf.runs:
        run.params["series_bucket_s"] = bucket_s
    (result,) = report.perf.results
    ref, cand = report.perf.runs
    perf = Profile.model_validate(report.profile).perf
    assert perf is not None
    result.reference = fns.summarize(ref, perf.slo).model_dump(mode="json")
    result.candidate = fns.summarize(cand, perf.slo).model_dump(mode="json")
    return report
