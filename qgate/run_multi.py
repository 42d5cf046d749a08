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

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path

from qgate.perf.records import ScenarioRun
from qgate.profile_multi_loader import LoadedMulti
from qgate.quality.records import DivergenceRun, Verdict
from qgate.quality.stage import QualityOutput
from qgate.report.model import PerfStatus, Report
from qgate.run_context import RunContext
from qgate.run_options import RunOptions, RunOutcome

__all__ = ["CandidateResult", "MultiContext", "prepare_multi", "run_multi"]

log = logging.getLogger("qgate")

CANDIDATES_DIR = "candidates"


@dataclass
class MultiContext:
    """The reference's context (run folder root) and one context per candidate."""

    loaded: LoadedMulti
    reference: RunContext
    candidates: list[RunContext]


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


def prepare_multi(opts: RunOptions, loaded: LoadedMulti) -> MultiContext:
    """Resolve the checkpoint, emulate weights once per distinct setting, load the signer."""
    from qgate.embedded import cache_root
    from qgate.report.files import new_run_dir
    from qgate.report.keys import load_signer
    from qgate.run_context import _resolve_model
    from qgate.runtime.capabilities import probe_cpu, select_runtimes

    cpu = probe_cpu()
    first = loaded.multi.candidates[0].profile
    source = _resolve_model(first)
    signing = first.signing
    signer = load_signer(
        opts.key or signing.key, signing.key_env, signing.kms_uri,
        "ed25519" if signing.scheme == "ed25519" else "ecdsa",
    )  # fmt: skip
    run_dir = new_run_dir(opts.out_root, loaded.multi.name)
    contexts = []
    for cand in loaded.multi.candidates:
        selection = select_runtimes(cand.profile, cpu)
        profile = cand.profile.model_copy(
            update={"reference": selection.reference, "candidate": selection.candidate}
        )
        paths: dict[str, Path] = {}
        for role in ("reference", "candidate"):
            spec = getattr(profile, role).emulate_weights
            if spec is None:
                paths[role] = source
            else:
                from qgate.emulate import emulate_checkpoint

                paths[role] = emulate_checkpoint(source, spec, cache_root() / "emulated")
        contexts.append(
            RunContext(
                opts=opts, profile=profile, profile_path=loaded.path, profile_sha256=loaded.sha256,
                run_dir=run_dir / CANDIDATES_DIR / cand.name, source_model=source,
                model_paths=paths, tokenizer_path=profile.model.tokenizer or source,
                signer=signer, declared_profile=cand.profile, selection=selection,
            )
        )  # fmt: skip
    for note in dict.fromkeys(n for c in contexts for n in c.selection.notes):
        log.info("%s", note)
    log.info("run folder %s (%d candidates)", run_dir, len(contexts))
    return MultiContext(loaded, dataclasses.replace(contexts[0], run_dir=run_dir), contexts)


def _candidate(ctx: RunContext, reference: QualityOutput, force_perf: bool) -> CandidateResult:
    """Start one candidate, gate it against the reference, measure it when it passed."""
    import time

    from qgate import run_stages as stages
    from qgate.errors import InfrastructureError
    from qgate.quality.gates import evaluate_quality, overall_passed
    from qgate.report.verdict import perf_status
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
    from qgate import run_stages as stages
    from qgate.pipeline import StageClock

    clock = StageClock()
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
        clock.timings[f"candidate:{result.name}"] = result.seconds
        results.append(result)
    ref_perf: list[ScenarioRun] = []
    with clock.stage("reference_perf"):
        if any(r.perf_runs for r in results) and stages.compares_to_reference(ref_ctx):
            with stages.started(ref_ctx, "reference") as runtime:
                ref_perf = stages.perf_on(ref_ctx, runtime, "reference", reference)
    with clock.stage("report"):
        reports = [_report(c, r, reference, ref_perf, clock.timings)
                   for c, r in zip(mctx.candidates, results, strict=True)]  # fmt: skip
        from qgate.run_multi_report import write_multi

        return write_multi(mctx, results, reports, clock.timings)


def _report(
    ctx: RunContext,
    result: CandidateResult,
    reference: QualityOutput,
    ref_perf: list[ScenarioRun],
    timings: dict[str, float],
) -> Report | None:
    """The report a single run of this candidate would have made."""
    from qgate.run_report import build

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
