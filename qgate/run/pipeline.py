"""`qgate run`: the story of DESIGN.md, one call per stage.

load -> fingerprint -> reference (or its cached results) -> candidate ->
gates -> perf (only when every gate passed) -> report -> sign -> write.
Every stage's raw results are written into the run folder as soon as they
exist, so an interrupted or failed run keeps what it finished.
"""

from __future__ import annotations

from qgate.core.progress import StageClock
from qgate.perf.records import ScenarioRun
from qgate.quality.stage import QualityOutput
from qgate.run.options import RunOptions, RunOutcome

__all__ = ["RunOptions", "RunOutcome", "StageClock", "run"]


def run(opts: RunOptions) -> RunOutcome:
    """Run the whole pipeline for one profile."""
    from qgate.profile.load_multi import LoadedMulti, load_any_profile_file
    from qgate.quality.gates import evaluate_quality, overall_passed
    from qgate.report.verdict import perf_status
    from qgate.run import stages
    from qgate.runtime.scales import kv_scale_verdicts

    loaded = load_any_profile_file(opts.profile)
    if isinstance(loaded, LoadedMulti):  # several candidates: qgate/run/multi.py
        from qgate.run.multi import run_multi

        return run_multi(opts, loaded)
    clock = StageClock()
    with clock.stage("load"):
        ctx = stages.prepare(opts)
    with clock.stage("fingerprint"):
        stages.fingerprint(ctx)
    if stages.wants_preflight(ctx):
        with clock.stage("candidate_preflight"):
            stages.preflight_candidate(ctx)
    with clock.stage("reference_quality"):
        reference = stages.reference_quality(ctx)
    candidate: QualityOutput
    perf_runs: list[ScenarioRun] = []
    with clock.stage("candidate"), stages.started(ctx, "candidate") as runtime:
        candidate = stages.quality_on(ctx, runtime, "candidate", reference)
        divergence = stages.divergence_of(reference, candidate)
        runs = reference.runs + candidate.runs
        verdicts = evaluate_quality(ctx.profile.quality, runs, divergence)
        verdicts += kv_scale_verdicts(
            ctx.profile.engine.uncalibrated_kv_scales,
            [c for c in (reference.effective_config, candidate.effective_config) if c],
        )
        status = perf_status(overall_passed(verdicts), ctx.no_perf, opts.force_perf)
        if status in ("ran", "ungated"):
            perf_runs += stages.perf_on(ctx, runtime, "candidate", candidate)
    with clock.stage("reference_perf"):
        if perf_runs and stages.compares_to_reference(ctx):
            with stages.started(ctx, "reference") as runtime:
                perf_runs += stages.perf_on(ctx, runtime, "reference", reference)
    with clock.stage("report"):
        return stages.report(ctx, reference, candidate, divergence, verdicts, status, perf_runs,
                             clock.timings)  # fmt: skip

