"""`qgate run`: the story of a run, one call per stage, for one candidate or several.

load -> fingerprint -> plan (qgate/run/plan.py) -> the plan signed (qgate/run/preregister.py)
-> [side by side where both fit: qgate/run/together.py; otherwise:] [candidate preflight] ->
the reference's life: quality and perf baseline (or its cached quality) ->
each candidate's life: quality, gates, perf only when every gate passed ->
[attribution of a failing candidate: sub-candidates, each a life, qgate/run/attribute.py] ->
[a perf-only life of the reference when its quality was cached] ->
[perf.rounds: both sides again in fresh lives, ABBA: qgate/run/rounds.py] -> report ->
sign -> write. Each runtime starts once (once per perf round), made by the run's `Lives`
(qgate/run/lives.py: local processes, or an executor's). A profile with one `candidate:` is a
run with one candidate. Every stage's raw results
are written into the run folder as soon as they exist, so an interrupted or
failed run keeps what it finished.
"""

from __future__ import annotations

from functools import partial

from qgate.cluster.waves import in_waves
from qgate.core.plan import Work
from qgate.core.progress import StageClock
from qgate.profile.load_multi import first_profile, load_any_profile_file
from qgate.run.attribute import attribute_failures
from qgate.run.candidate import CandidateResult, evaluate
from qgate.run.context import engine_envs, fingerprint, prepare
from qgate.run.lives import Lives, lives_for
from qgate.run.options import RunOptions, RunOutcome
from qgate.run.placement import plan
from qgate.run.preregister import preregister
from qgate.run.reference import preflight_candidate, reference_life, reference_perf
from qgate.run.report import report
from qgate.run.rounds import rounds_in_sequence, rounds_side_by_side
from qgate.run.together import side_by_side

__all__ = ["RunOptions", "RunOutcome", "StageClock", "run"]


def run(opts: RunOptions, lives: Lives | None = None) -> RunOutcome:
    """Run the whole pipeline for one profile; every server made by `lives` (None: the
    cluster `opts.cluster` or the profile names, else this machine: `lives_for`)."""
    clock = StageClock()
    with clock.stage("load"):
        loaded = load_any_profile_file(opts.profile)
        if lives is None:
            lives = lives_for(opts.cluster, first_profile(loaded), opts.executor)
        runs = prepare(opts, loaded, lives)
    with clock.stage("fingerprint"):
        found = fingerprint(runs.reference)
        found = engine_envs(runs, found)  # sides that pin their engine release (engine.package)
    the_plan = plan(runs, found.fingerprint)
    preregister(runs, the_plan, opts)  # the plan, margins and alpha signed before any server
    checks = [
        (ctx, the_plan.preflight[name])
        for name, ctx in zip(runs.names, runs.candidates, strict=True)
    ]
    if any(how != "none" for _, how in checks):
        with clock.stage("candidate_preflight"):
            for ctx, how in checks:
                if how != "none":
                    preflight_candidate(ctx, how)
    if the_plan.mode == "together":  # both lives at once (qgate/run/together.py)
        both = side_by_side(
            runs.reference,
            runs.candidates[0],
            found.fingerprint,
            runs.names[0],
            opts.force_perf,
            clock,
            the_plan.blocks,
        )
        both = rounds_side_by_side(runs.reference, runs.candidates[0], both, the_plan.blocks, clock)
        attribute_failures(runs, both.reference, [both.result], clock)
        with clock.stage("report"):
            return report(
                runs,
                found,
                both.source,
                both.reference,
                [both.result],
                both.ref_perf,
                clock.timings,
                the_plan,
            )
    first = the_plan.lives[0]
    reference_first = first.side == "reference" and Work.PERF_BASELINE in first.work
    reference, ref_perf, source = reference_life(
        runs.reference, found.fingerprint, with_perf=reference_first, clock=clock
    )

    def one(index: int) -> CandidateResult:
        with clock.stage(runs.stage_of(index)):
            return evaluate(
                runs.candidates[index],
                runs.names[index],
                reference,
                opts.force_perf,
                keep_going=runs.multi is not None,
            )

    # an executor with room for several lives runs the candidates in waves (qgate/cluster/)
    results: list[CandidateResult] = in_waves(
        [partial(one, i) for i in range(len(runs.candidates))],
        lives.at_once(runs.candidates[0].profile),
        lives.stop_all,
    )
    attribute_failures(runs, reference, results, clock)
    if ref_perf is None:  # the reference's quality came from the cache: a perf-only life
        with clock.stage("reference_perf"):
            ref_perf = reference_perf(runs.reference, reference, results)
    # perf.rounds: both sides again in fresh lives, ABBA (qgate/run/rounds.py)
    ref_perf = rounds_in_sequence(runs, reference, results, ref_perf, reference_first, clock)
    with clock.stage("report"):
        return report(runs, found, source, reference, results, ref_perf, clock.timings, the_plan)
