"""One candidate's part of a run: start it, gate it against the reference, measure it.

The same routine for a profile with one candidate and one with several. With
several (`keep_going`), a candidate whose runtime fails (does not start,
crashes, hangs) is recorded with its root cause as ERROR and the others still
run; with one, the failure ends the run (exit 3), as nothing is left to
compare.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from qgate.core.verdict import Verdict
from qgate.errors import InfrastructureError
from qgate.gates.judge import perf_status, quality_verdicts
from qgate.gates.judgement import Evidence, PerfStatus
from qgate.gates.quality import overall_passed
from qgate.perf.records import ScenarioRun
from qgate.quality.divergence_suite import build_divergence_run
from qgate.quality.records import DivergenceRun
from qgate.quality.stage import QualityOutput
from qgate.report.attribution import Attribution
from qgate.run.context import RunContext, quality_on, started
from qgate.run.perf import perf_blocks

__all__ = [
    "CandidateResult",
    "divergence_of",
    "evaluate",
    "judge",
    "perf_with_baseline",
    "settled_fail",
]

log = logging.getLogger("qgate")


@dataclass
class CandidateResult:
    """What one candidate produced: its quality, gates and perf, or why it could not."""

    name: str
    quality: QualityOutput | None = None
    divergence: DivergenceRun | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    status: PerfStatus = "skipped: --skip-perf"
    perf_runs: list[ScenarioRun] = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    attribution: Attribution | None = None  # which of its changes broke it, when asked


def evaluate(
    ctx: RunContext, name: str, reference: QualityOutput, force_perf: bool, keep_going: bool
) -> CandidateResult:
    """Start the candidate, run its quality, gate it, run its perf when every gate passed."""
    out = CandidateResult(name=name)
    start = time.perf_counter()
    try:
        with started(ctx, "candidate") as runtime:
            out.quality = quality_on(ctx, runtime, "candidate", reference)
            judge(ctx, out, reference, force_perf)
            if settled_fail(ctx, out):
                ctx.probing.settled(runtime)
            if out.status in ("ran", "ungated"):
                out.perf_runs = perf_blocks(
                    ctx, runtime, "candidate", out.quality, reference=reference
                )
    except InfrastructureError as exc:
        if not keep_going:
            raise
        # This candidate's runtime failed: record the root cause; the others still run.
        tail = "; ".join(exc.details[-3:])
        out.error = exc.message + (f" ({tail})" if tail else "")
        log.error("candidate %s: %s", name, out.error)
    out.seconds = round(time.perf_counter() - start, 3)
    return out


def judge(
    ctx: RunContext, out: CandidateResult, reference: QualityOutput, force_perf: bool
) -> None:
    """Gate the candidate's quality (in `out`) against the reference's; decide its perf status."""
    assert out.quality is not None
    out.divergence = divergence_of(reference, out.quality)
    evidence = Evidence(
        runs=tuple(reference.runs + out.quality.runs),
        divergence=out.divergence,
        passes=tuple(reference.passes + out.quality.passes),
        speculative=tuple(reference.speculative + out.quality.speculative),
        configs=tuple(c for c in (reference.effective_config, out.quality.effective_config) if c),
        noise_floor=reference.floor,
    )
    out.verdicts = quality_verdicts(ctx.profile, evidence)  # the judge's first group
    out.status = perf_status(out.verdicts, ctx.no_perf, force_perf)


def settled_fail(ctx: RunContext, out: CandidateResult) -> bool:
    """The candidate failed a gate and its profile stops once the verdict is settled
    (`quality.stop: verdict`): nothing left in its life can change the verdict."""
    return ctx.profile.quality.stop == "verdict" and not overall_passed(out.verdicts)


def perf_with_baseline(result: CandidateResult, ref_perf: list[ScenarioRun]) -> list[ScenarioRun]:
    """The candidate's perf runs and the reference's runs of the same scenarios and rounds
    (a candidate whose gates did not pass has no later rounds)."""
    held = {(r.scenario, r.round) for r in result.perf_runs}
    return result.perf_runs + [r for r in ref_perf if (r.scenario, r.round) in held]


def divergence_of(reference: QualityOutput, candidate: QualityOutput) -> DivergenceRun | None:
    """Per-position divergence of the candidate's scores from the reference's."""
    if reference.scores is None or candidate.scores is None:
        return None
    return build_divergence_run(reference.scores, candidate.scores)
