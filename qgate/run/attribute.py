"""Which change broke it: delta debugging over a failing candidate's changes.

A candidate rarely changes one thing (FP8 weights, an FP8 KV cache and half a
dozen kernel switches at once). When it fails its gates, its changes against
the reference are listed (each engine argument, each environment variable,
the emulated weights, the engine block; a profile's `attribution.groups` make
several one), and sub-candidates (the reference plus some of the changes) run
against the **same reference records**, each in a life of its own and without
perf: halves first, then smaller parts and their complements (Zeller's ddmin),
until the smallest failing set is shown 1-minimal or the budget of lives is
spent (then the set reached is reported as not minimal). A sub-candidate that
cannot run here is recorded as ERROR (never guessed), and counts as not failing.

`changes_of` and `sub_profile` are pure functions of the profile; `search` is
ddmin over any test; `attribute` runs the trials; `attribute_failures` runs it
for each failing candidate of a run where it is asked.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from functools import partial

from qgate.cluster.waves import in_waves
from qgate.core.ddmin import Outcome, search_rounds
from qgate.core.progress import StageClock
from qgate.gates.quality import harm_shown
from qgate.profile.changes import changes_of, sub_profile
from qgate.quality.stage import QualityOutput
from qgate.report.attribution import Attribution, Trial
from qgate.run.candidate import CandidateResult, evaluate
from qgate.run.context import RunContext, RunSet, model_paths
from qgate.run.reference import complete

__all__ = ["attribute", "attribute_failures", "attribution_wanted"]

log = logging.getLogger("qgate")


def _trial_name(changes: Sequence[str]) -> str:
    short = "-".join(c.split(".")[-1].replace("+", "-") for c in changes)
    return ("only-" + short)[:60]


def attribute(
    ctx: RunContext, reference: QualityOutput, max_lives: int, groups: Sequence[Sequence[str]]
) -> Attribution:
    """Run the search for the failing candidate of `ctx`; every trial's records kept."""
    changes = changes_of(ctx.profile, groups)
    trials: list[Trial] = []
    opts = dataclasses.replace(ctx.opts, skip_perf=True)  # attribution judges gates only

    def trial(applied: tuple[str, ...]) -> Trial:
        name = _trial_name(applied)
        sub = sub_profile(ctx.profile, applied)
        log.info("attribution: trial %s", " + ".join(applied))
        trial_ctx = dataclasses.replace(
            ctx,
            opts=opts,
            profile=sub,
            declared_profile=sub,
            side=name,
            run_dir=ctx.run_dir / "attribution" / name,
            model_paths=model_paths(sub, ctx.source_model, ctx.lives.places_lives),
        )
        start = time.perf_counter()
        result = evaluate(trial_ctx, name, reference, force_perf=False, keep_going=True)
        verdict: Outcome = (
            "ERROR"
            if result.error is not None or result.quality is None
            else "FAIL"
            if harm_shown(result.verdicts)
            else "PASS"
        )
        log.info("attribution: %s -> %s", " + ".join(applied), verdict)
        return Trial(
            name=name,
            changes=list(applied),
            verdict=verdict,
            verdicts=result.verdicts,
            runs=result.quality.runs if result.quality else [],
            divergence=result.divergence,
            passes=result.quality.passes if result.quality else [],
            effective_config=result.quality.effective_config if result.quality else None,
            error=result.error,
            seconds=round(time.perf_counter() - start, 3),
        )

    def test_many(keys: list[tuple[str, ...]]) -> list[Outcome]:
        done = in_waves([partial(trial, k) for k in keys], width, ctx.lives.stop_all)
        trials.extend(done)  # in the search's order, whichever life ended first
        return [t.verdict for t in done]

    # an executor with room for several lives tries a round's sets at once (qgate/cluster/)
    width = ctx.lives.at_once(ctx.profile)
    found = search_rounds([c.name for c in changes], test_many, max_lives, width)
    return Attribution(
        changes=changes,
        trials=trials,
        minimal=list(found.failing) if found.failing else None,
        complete=found.complete,
        lives=len(trials),
        max_lives=max_lives,
        not_tried=[" + ".join(found.next_set)] if found.next_set else [],
        width=width,
    )


def attribution_wanted(ctx: RunContext) -> bool:
    """`--attribute`, or the profile's `attribution:` block enabled."""
    spec = ctx.profile.attribution
    return ctx.opts.attribute or (spec is not None and spec.enabled)


def attribute_failures(
    runs: RunSet, reference: QualityOutput, results: list[CandidateResult], clock: StageClock
) -> None:
    """For each failing candidate where attribution is asked: its attribution, in `results`."""
    for index, (ctx, result) in enumerate(zip(runs.candidates, results, strict=True)):
        if not attribution_wanted(ctx) or result.error or result.quality is None:
            continue
        if not harm_shown(result.verdicts):  # passed, or INCONCLUSIVE: nothing to attribute
            continue
        if not complete(ctx.profile.quality, reference):
            log.warning("attribution skipped: the reference's quality stopped early")
            continue
        spec = ctx.profile.attribution
        stage = "attribution" + ("" if runs.multi is None else f":{runs.names[index]}")
        with clock.stage(stage):
            result.attribution = attribute(
                ctx, reference, spec.max_lives if spec else 8, spec.groups if spec else []
            )
