"""Perf rounds in fresh server lives (perf.rounds), in ABBA order.

A restart can move a speed ratio by more than the noise within one life, so a
profile may ask for R rounds. Round 0 is the perf the run already does (the
reference's baseline in its life and the candidate's perf in its own, or the
interleaved blocks side by side). Rounds 1 .. R-1 (people count them 2 .. R)
run only when a candidate's gates passed (perf status 'ran') and its speed
compares to the reference's: each starts fresh lives of both sides through the
run's `Lives` (`RunContext.new_runtime`, the context carrying the round, so an
executor places them and knows their round) and runs every scenario with all
its blocks on each; quality is not asked again (correctness probes under load
ride along as in every perf life). Each round runs its sides in the reverse
order of the round before (`swapped`: reference, candidate | candidate,
reference | reference, candidate ...), so a drift that favours whichever side
runs second cancels. Side by side, a round starts both at once and its
interleaving begins with the candidate in odd rounds. Every run is tagged with
its round; the raw files keep every round's runs, and qgate/perf/blocks.py
turns the round ratios into each ratio's across-round interval.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from contextlib import ExitStack
from typing import NamedTuple, TypeVar

from qgate.core.plan import swapped
from qgate.core.progress import StageClock
from qgate.core.records import Role
from qgate.errors import InfrastructureError
from qgate.perf.records import ScenarioRun
from qgate.quality.stage import QualityOutput
from qgate.run.candidate import CandidateResult
from qgate.run.context import RunContext, RunSet, started
from qgate.run.perf import compares_to_reference, perf_blocks
from qgate.run.together import SideBySide, interleaved, start_both

__all__ = ["in_round", "later_rounds", "order_of", "rounds_side_by_side", "rounds_in_sequence"]

log = logging.getLogger("qgate")

T = TypeVar("T")


def later_rounds(ctx: RunContext) -> range:
    """The rounds after round 0 that `ctx`'s profile asks for (empty: one round)."""
    spec = ctx.profile.perf
    if spec is None or not compares_to_reference(ctx):
        return range(0)
    return range(1, spec.rounds)


def in_round(ctx: RunContext, round: int) -> RunContext:
    """`ctx` for the lives of perf round `round` (same run folder, starts and lives)."""
    return dataclasses.replace(ctx, round=round)


def order_of(first: Sequence[T], round: int) -> list[T]:
    """Round `round`'s order of the sides that ran in `first`'s order in round 0 (ABBA)."""
    return list(reversed(first)) if swapped(round) else list(first)


class _Side(NamedTuple):
    """One side of the later rounds: the reference (result None) or a candidate."""

    ctx: RunContext
    result: CandidateResult | None


def rounds_in_sequence(
    runs: RunSet,
    reference: QualityOutput,
    results: Sequence[CandidateResult],
    ref_perf: list[ScenarioRun],
    reference_first: bool,
    clock: StageClock,
) -> list[ScenarioRun]:
    """The later rounds of a run in sequence: each side's fresh life, in ABBA order. Every
    candidate whose perf ran on passed gates gains its rounds' runs (in its result); returns
    the reference's runs of every round. `reference_first`: the reference's perf came before
    the candidates' in round 0."""
    rounds = later_rounds(runs.reference)
    passed = [
        _Side(ctx, r)
        for ctx, r in zip(runs.candidates, results, strict=True)
        if r.status == "ran" and r.perf_runs and r.error is None
    ]
    if not rounds or not passed or not ref_perf:
        return ref_perf
    ref_perf = list(ref_perf)
    ref = _Side(runs.reference, None)
    first = [ref, *passed] if reference_first else [*passed, ref]
    with clock.stage("perf_rounds"):
        for k in rounds:
            for side in order_of(first, k):
                if side.result is not None and side.result.error is not None:
                    continue  # its runtime failed in an earlier round (several candidates)
                log.info("perf round %d/%d: %s in a fresh life", k + 1, rounds.stop, side.ctx.side)
                if side.result is None:
                    ref_perf += _life(in_round(side.ctx, k), reference, "reference", ref_perf)
                    continue
                _candidate_round(runs, side.ctx, side.result, k, reference)
    return ref_perf


def _life(
    ctx: RunContext,
    quality: QualityOutput,
    role: Role,
    earlier: Sequence[ScenarioRun],
    reference: QualityOutput | None = None,
) -> list[ScenarioRun]:
    """One side's fresh life of a later round: its perf blocks, nothing else (its probes
    picked from `reference`'s records, its own when None)."""
    with started(ctx, role) as runtime:
        return perf_blocks(ctx, runtime, role, quality, earlier, reference)


def _candidate_round(
    runs: RunSet, ctx: RunContext, result: CandidateResult, k: int, reference: QualityOutput
) -> None:
    """One candidate's fresh life of round `k`; with several candidates a runtime failure is
    its error (its report dropped, as in its first life), otherwise it ends the run."""
    assert result.quality is not None
    try:
        result.perf_runs += _life(
            in_round(ctx, k), result.quality, "candidate", result.perf_runs, reference
        )
    except InfrastructureError as exc:
        if runs.multi is None:
            raise
        result.error = f"perf round {k + 1}: {exc.message}"
        log.error("candidate %s: %s", result.name, result.error)


def rounds_side_by_side(
    ctx: RunContext, cand: RunContext, both: SideBySide, blocks: int, clock: StageClock
) -> SideBySide:
    """The later rounds side by side: both sides started at once in fresh lives, their
    blocks interleaved (the candidate first in odd rounds)."""
    rounds = later_rounds(cand)
    result = both.result
    if not rounds or result.status != "ran" or not both.ref_perf or result.quality is None:
        return both
    ref_perf, cand_perf = list(both.ref_perf), list(result.perf_runs)
    with clock.stage("perf_rounds"):
        for k in rounds:
            log.info("perf round %d/%d: both sides in fresh lives", k + 1, rounds.stop)
            ref_k, cand_k = in_round(ctx, k), in_round(cand, k)
            with ExitStack() as life:
                ref_rt, cand_rt = start_both(ref_k, cand_k, life)
                more = interleaved(
                    ref_k,
                    cand_k,
                    ref_rt,
                    cand_rt,
                    both.reference,
                    result.quality,
                    blocks,
                    (ref_perf, cand_perf),
                )
            ref_perf += more[0]
            cand_perf += more[1]
    result.perf_runs = cand_perf
    return both._replace(ref_perf=ref_perf)
