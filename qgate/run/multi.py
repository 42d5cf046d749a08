"""`qgate run` of a profile with several candidates: one reference, each candidate in turn.

prepare once -> fingerprint -> reference quality once (or from the signed
cache) -> for each candidate: start, quality, divergence, gates, perf when
its gates pass, stop -> reference perf once (when some candidate's perf ran),
the baseline of every candidate -> one single-candidate report per candidate,
exactly as a single run would build it -> one signed multi report.

The reference's raw results go to the run folder's raw/ and logs/, each
candidate's to candidates/NAME/raw and candidates/NAME/logs, so nothing
collides. A candidate whose runtime fails (does not start, crashes, hangs)
is recorded with its root cause as ERROR and the others still run; a
failing reference fails the run as in a single run.
"""

from __future__ import annotations

import logging
import time

from qgate.core.progress import StageClock
from qgate.perf.records import ScenarioRun
from qgate.profile.load_multi import LoadedMulti
from qgate.quality.stage import QualityOutput
from qgate.report.model import Report
from qgate.run.context import RunContext
from qgate.run.multi_context import CandidateResult, prepare_multi
from qgate.run.options import RunOptions, RunOutcome

__all__ = ["run_multi"]

log = logging.getLogger("qgate")


def _candidate(ctx: RunContext, reference: QualityOutput, force_perf: bool) -> CandidateResult:
    """Start one candidate, gate it against the reference, measure it when it passed."""
    from qgate.errors import InfrastructureError
    from qgate.quality.gates import evaluate_quality, overall_passed
    from qgate.report.verdict import perf_status
    from qgate.run import stages
    from qgate.runtime.scales import kv_scale_verdicts

    name = ctx.run_dir.name
    out = CandidateResult(name=name)
    start = time.perf_counter()
    try:
        with stages.started(ctx, "candidate") as runtime:
            out.quality = stages.quality_on(ctx, runtime, "candidate", reference)
            out.divergence = stages.divergence_of(reference, out.quality)
            runs = reference.runs + out.quality.runs
            out.verdicts = evaluate_quality(ctx.profile.quality, runs, out.divergence)
            out.verdicts += kv_scale_verdicts(
                ctx.profile.engine.uncalibrated_kv_scales,
                [c for c in (reference.effective_config, out.quality.effective_config) if c],
            )
            out.status = perf_status(overall_passed(out.verdicts), ctx.no_perf, force_perf)
            if out.status in ("ran", "ungated"):
                out.perf_runs = stages.perf_on(ctx, runtime, "candidate", out.quality)
    except InfrastructureError as exc:
        # This candidate's runtime failed: record the root cause; the others still run.
        tail = "; ".join(exc.details[-3:])
        out.error = exc.message + (f" ({tail})" if tail else "")
        log.error("candidate %s: %s", name, out.error)
    out.seconds = round(time.perf_counter() - start, 3)
    return out


def run_multi(opts: RunOptions, loaded: LoadedMulti) -> RunOutcome:
    """The whole pipeline for a profile with several candidates."""
    from qgate.run import stages
    clock = StageClock()
    timings = clock.timings
    with clock.stage("load"):
        mctx = prepare_multi(opts, loaded)
    ref_ctx = mctx.reference
    with clock.stage("fingerprint"):
        stages.fingerprint(ref_ctx)
    if ref_ctx.profile.engine.preflight == "always":
        with clock.stage("candidate_preflight"):
            for ctx in mctx.candidates:
                stages.preflight_candidate(ctx)
    with clock.stage("reference_quality"):
        reference = stages.reference_quality(ref_ctx)
    results: list[CandidateResult] = []
    for ctx in mctx.candidates:
        ctx.fingerprint, ctx.target_mismatches = ref_ctx.fingerprint, ref_ctx.target_mismatches
        ctx.reference_cached = ref_ctx.reference_cached
        ctx.reference_provenance = ref_ctx.reference_provenance
        log.info("candidate %s", ctx.run_dir.name)
        result = _candidate(ctx, reference, opts.force_perf)
        timings[f"candidate:{result.name}"] = result.seconds
        results.append(result)
    ref_perf: list[ScenarioRun] = []
    with clock.stage("reference_perf"):
        if any(r.perf_runs for r in results) and stages.compares_to_reference(ref_ctx):
            with stages.started(ref_ctx, "reference") as runtime:
                ref_perf = stages.perf_on(ref_ctx, runtime, "reference", reference)
    with clock.stage("report"):
        reports = [_report(c, r, reference, ref_perf, timings)
                   for c, r in zip(mctx.candidates, results, strict=True)]  # fmt: skip
        from qgate.run.multi_report import write_multi

        return write_multi(mctx, results, reports, timings)


def _report(
    ctx: RunContext,
    result: CandidateResult,
    reference: QualityOutput,
    ref_perf: list[ScenarioRun],
    timings: dict[str, float],
) -> Report | None:
    """The report a single run of this candidate would have made."""
    from qgate.run.report import build

    if result.quality is None or result.error is not None:
        return None
    own = {k: v for k, v in timings.items() if not k.startswith("candidate:")}
    single = {"load": own.get("load", 0.0), "fingerprint": own.get("fingerprint", 0.0),
              "reference_quality": own.get("reference_quality", 0.0),
              "candidate": result.seconds,
              "reference_perf": own.get("reference_perf", 0.0)}  # fmt: skip
    scenarios = {r.scenario for r in result.perf_runs}
    perf = result.perf_runs + [r for r in ref_perf if r.scenario in scenarios]
    return build(ctx, reference, result.quality, result.divergence, result.verdicts,
                 result.status, perf, single)  # fmt: skip
