"""A synthetic report whose perf ran in several rounds (perf.rounds), derived as `run` does."""

from __future__ import annotations

from helpers.report_synthetic import build_report
from helpers.resign import salted_as_run

from qgate.gates.judge import perf_results
from qgate.gates.speed import report_gates
from qgate.perf.records import RequestRecord
from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.verify.single import default_recompute


def stretched(request: RequestRecord, factor: float) -> RequestRecord:
    """The request with its token gaps `factor` times as long."""
    first = request.token_times_ns[0]
    times = [first + int((t - first) * factor) for t in request.token_times_ns]
    return request.model_copy(update={"token_times_ns": times, "done_ns": times[-1] + 1_000})


def rounds_report(rounds: int = 2, held: int | None = None) -> Report:
    """build_report's run measured again in `held` (default `rounds`) rounds, the candidate a
    little slower in each later round, its results derived as `qgate run` derives them."""
    report = build_report(requests=6, fns=default_recompute())
    report.profile["perf"]["rounds"] = rounds
    profile = Profile.model_validate(report.profile)
    ref, cand = report.perf.runs
    runs = [ref, cand]
    for k in range(1, rounds if held is None else held):
        slower = [stretched(q, 1 + 0.1 * k) for q in cand.requests]
        runs += [
            ref.model_copy(update={"round": k}),
            cand.model_copy(update={"round": k, "requests": slower}),
        ]
    perf = report.perf
    perf.runs = runs
    salted_as_run(report, profile)
    perf.results = perf_results(
        profile.perf, runs, resamples=perf.bootstrap_resamples, seed=perf.bootstrap_seed
    )
    perf.gates = report_gates(profile.perf, perf.status, perf.results)
    return report
