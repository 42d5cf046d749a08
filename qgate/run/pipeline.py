"""`qgate run`: the story of DESIGN.md, one call per stage, for one candidate or several.

load -> fingerprint -> [candidate preflight] -> reference (or its cached
results) -> each candidate: start, quality, gates, perf only when every gate
passed -> the reference's perf baseline -> report -> sign -> write. A profile
with one `candidate:` is a run with one candidate. Every stage's raw results
are written into the run folder as soon as they exist, so an interrupted or
failed run keeps what it finished.
"""

from __future__ import annotations

from qgate.core.progress import StageClock
from qgate.run.options import RunOptions, RunOutcome

__all__ = ["RunOptions", "RunOutcome", "StageClock", "run"]


def run(opts: RunOptions) -> RunOutcome:
    """Run the whole pipeline for one profile."""
    from qgate.profile.load_multi import load_any_profile_file
    from qgate.run import stages

    clock = StageClock()
    with clock.stage("load"):
        runs = stages.prepare(opts, load_any_profile_file(opts.profile))
    with clock.stage("fingerprint"):
        stages.fingerprint(runs.reference)
    runs.share_reference()
    preflight = [ctx for ctx in runs.candidates if stages.wants_preflight(ctx)]
    if preflight:
        with clock.stage("candidate_preflight"):
            for ctx in preflight:
                stages.preflight_candidate(ctx)
    with clock.stage("reference_quality"):
        reference = stages.reference_quality(runs.reference)
    runs.share_reference()
    results = []
    for index, ctx in enumerate(runs.candidates):
        with clock.stage(runs.stage_of(index)):
            results.append(stages.candidate(ctx, runs.names[index], reference, opts.force_perf,
                                            keep_going=runs.multi is not None))  # fmt: skip
    with clock.stage("reference_perf"):
        ref_perf = stages.reference_perf(runs.reference, reference, results)
    with clock.stage("report"):
        return stages.report(runs, reference, results, ref_perf, clock.timings)
