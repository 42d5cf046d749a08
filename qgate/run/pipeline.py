"""`qgate run`: the story of DESIGN.md, one call per stage, for one candidate or several.

load -> fingerprint -> plan (qgate/run/plan.py) -> [side by side where both fit:
qgate/run/together.py; otherwise:] [candidate preflight] ->
the reference's life: quality and perf baseline (or its cached quality) ->
each candidate's life: quality, gates, perf only when every gate passed ->
[attribution of a failing candidate: sub-candidates, each a life, qgate/run/attribute.py] ->
[a perf-only life of the reference when its quality was cached] -> report ->
sign -> write. Each runtime starts once. A profile with one `candidate:` is a
run with one candidate. Every stage's raw results
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
    plan = stages.plan(runs)
    checks = [
        (ctx, plan.preflight[name]) for name, ctx in zip(runs.names, runs.candidates, strict=True)
    ]
    if any(how != "none" for _, how in checks):
        with clock.stage("candidate_preflight"):
            for ctx, how in checks:
                if how != "none":
                    stages.preflight_candidate(ctx, how)
    if plan.mode == "together":  # both lives at once (qgate/run/together.py)
        from qgate.run.together import side_by_side

        both = side_by_side(
            runs.reference, runs.candidates[0], runs.names[0], opts.force_perf, clock, plan.blocks
        )
        runs.share_reference()
        stages.attribute_failures(runs, both[0], [both[2]], clock)
        with clock.stage("report"):
            return stages.report(runs, both[0], [both[2]], both[1], clock.timings, plan)
    first_life = plan.lives[0].side == "reference"
    reference, ref_perf = stages.reference_life(
        runs.reference,
        with_perf=first_life and "perf baseline" in plan.lives[0].serves,
        clock=clock,
    )
    runs.share_reference()
    results = []
    for index, ctx in enumerate(runs.candidates):
        with clock.stage(runs.stage_of(index)):
            results.append(
                stages.candidate(
                    ctx,
                    runs.names[index],
                    reference,
                    opts.force_perf,
                    keep_going=runs.multi is not None,
                )
            )
    stages.attribute_failures(runs, reference, results, clock)
    if ref_perf is None:  # the reference's quality came from the cache: a perf-only life
        with clock.stage("reference_perf"):
            ref_perf = stages.reference_perf(runs.reference, reference, results)
    with clock.stage("report"):
        return stages.report(runs, reference, results, ref_perf, clock.timings, plan)
