"""The glue of each pipeline stage: resolve, start, evaluate, save raw results, report.

`pipeline.run()` tells the story; each function here does one step of it by
calling into the stage packages (runtime, quality, perf, report), and writes
what it produced into the run folder at once so that nothing finished is lost
when a later stage fails or is interrupted. Preparing a run and starting a
runtime live in qgate/run/context.py, the reference stage in
qgate/run/reference.py, the report stage in qgate/run/report.py; this module
is the one surface the pipeline calls.
"""

from __future__ import annotations

import logging

from qgate.core.plan import Life, Plan
from qgate.core.progress import StageClock
from qgate.core.records import Role
from qgate.core.serving import Runtime
from qgate.perf.probes import Probe
from qgate.perf.records import ScenarioRun
from qgate.profile import ANSWER_MAX_TOKENS, Profile
from qgate.profile.changes import changes_of
from qgate.quality.records import DivergenceRun
from qgate.quality.stage import QualityOutput
from qgate.report.attribution import budget_note
from qgate.run.candidate import CandidateResult
from qgate.run.candidate import evaluate as candidate
from qgate.run.context import RunContext, RunSet, prepare, quality_on, started
from qgate.run.context import save_raw as _save
from qgate.run.reference import (
    preflight_candidate,
    reference_cached,
    reference_life,
    wants_preflight,
)
from qgate.run.report import headline, report

__all__ = [
    "CandidateResult",
    "RunContext",
    "RunSet",
    "candidate",
    "compares_to_reference",
    "divergence_of",
    "fingerprint",
    "headline",
    "perf_blocks",
    "perf_on",
    "preflight_candidate",
    "prepare",
    "plan",
    "quality_on",
    "reference_life",
    "reference_perf",
    "report",
    "started",
    "wants_preflight",
]

PROBES_MAX = 16


def fingerprint(ctx: RunContext) -> None:
    """Fingerprint the machine and the checkpoint; check the profile's target."""
    from qgate.checkpoint.embedded import cache_root
    from qgate.runtime.fingerprint import check_target, collect_fingerprint

    model_dir = ctx.source_model if ctx.source_model.is_dir() else None
    ctx.fingerprint = collect_fingerprint(model_dir, cache_root() / "digests.json")
    ctx.target_mismatches = check_target(ctx.profile.target, ctx.fingerprint)
    _save(ctx, "fingerprint.json", ctx.fingerprint)


def divergence_of(reference: QualityOutput, candidate: QualityOutput) -> DivergenceRun | None:
    """Per-position divergence of the candidate's scores from the reference's."""
    if reference.scores is None or candidate.scores is None:
        return None
    from qgate.quality.divergence_suite import build_divergence_run

    return build_divergence_run(reference.scores, candidate.scores)


def _probes(ctx: RunContext, quality: QualityOutput) -> list[Probe]:
    """Math items for correctness under load, with this runtime's quality-stage answers."""
    spec = ctx.profile.quality.math
    run = next((r for r in quality.runs if r.suite == "math.short"), None)
    if spec is None or run is None:
        return []
    from qgate.quality.math_suite import load_math_set, short_prompt
    from qgate.quality.sizing import math_limit

    items = {i.id: i for i in load_math_set(spec.set, math_limit(spec))[0]}
    out: list[Probe] = []
    for rec in run.items[:PROBES_MAX]:
        item = items.get(rec.id)
        if item is not None:
            out.append(
                (rec.id, [{"role": "user", "content": short_prompt(item.question)}], rec.answer)
            )
    return out


def perf_on(
    ctx: RunContext,
    runtime: Runtime,
    role: Role,
    quality: QualityOutput,
    save: bool = True,
    block: int = 0,
) -> list[ScenarioRun]:
    """Every perf scenario on one started runtime; raw records saved at once (unless the
    caller saves them with other blocks'). Block `block` draws its own prompts."""
    from qgate.perf.client import run_loop
    from qgate.perf.runner import run_scenarios
    from qgate.quality.stage import runtime_headers
    from qgate.runtime.causes import blamed_on

    spec = ctx.profile.perf
    assert spec is not None
    if quality.effective_config is None:  # a preview's reference starts only for perf
        quality.effective_config = runtime.effective_config()
    math = ctx.profile.quality.math
    # The same event loop (uvloop when installed) as `qgate perf`: the fidelity measured
    # by perf/bench_client_fidelity.py is the fidelity shipped.
    from qgate.perf.workloads import BLOCK

    token = BLOCK.set(block)
    try:
        with blamed_on(runtime):
            runs = run_loop(
                run_scenarios(
                    runtime.base_url,
                    runtime.served_model,
                    spec,
                    role,
                    gpus=ctx.profile.target.count,
                    headers=runtime_headers(runtime),
                    metric_names=getattr(runtime, "metrics", None),
                    probes=_probes(ctx, quality),
                    probe_params={
                        "temperature": 0.0,
                        "seed": ctx.profile.quality.seed,
                        "max_tokens": math.max_tokens if math else ANSWER_MAX_TOKENS,
                    },
                    progress=ctx.opts.progress,
                    timeout_s=ctx.profile.engine.request_timeout_s,
                )
            )
    finally:
        BLOCK.reset(token)
    runs = [r.model_copy(update={"block": block}) for r in runs] if block else runs
    if save:
        _save(ctx, f"{role}-perf.json", runs)
    return runs


def perf_blocks(
    ctx: RunContext, runtime: Runtime, role: Role, quality: QualityOutput
) -> list[ScenarioRun]:
    """perf.blocks blocks of every scenario on one runtime in one life (in sequence: the
    blocks' spread covers the drift within a life, not between the two lives)."""
    from qgate.run.plan import blocks_of

    runs: list[ScenarioRun] = []
    blocks = blocks_of(ctx.profile, together=False)
    for block in range(blocks):
        if blocks > 1:
            logging.getLogger("qgate").info("perf block %d/%d: %s", block + 1, blocks, role)
        runs += perf_on(ctx, runtime, role, quality, save=False, block=block)
        _save(ctx, f"{role}-perf.json", runs)
    return runs


def compares_to_reference(ctx: RunContext) -> bool:
    return ctx.profile.perf is not None and ctx.profile.perf.compare_to == "reference"


def reference_perf(
    ctx: RunContext, reference: QualityOutput, results: list[CandidateResult]
) -> list[ScenarioRun]:
    """The reference's perf baseline, once, when some candidate's perf ran and compares to it."""
    if not any(r.perf_runs for r in results) or not compares_to_reference(ctx):
        return []
    with started(ctx, "reference") as runtime:
        return perf_blocks(ctx, runtime, "reference", reference)


def placement(profile: Profile) -> str:
    """Where a started runtime runs, in words (the plan's placement)."""
    from qgate.runtime.capabilities import engine_on_cpu
    from qgate.runtime.cores import bind_spec, usable_cores

    kinds = {profile.engine_of(role).kind for role in ("reference", "candidate")}
    if kinds == {"endpoint"}:
        return "already running (endpoints)"
    target = profile.target
    if target.accelerator.lower() == "cpu" or engine_on_cpu(profile):
        cores = usable_cores()
        return f"cores {bind_spec(cores)} (all {len(cores)} usable), one server at a time"
    return f"{target.count} x {target.accelerator}, one server at a time"


def plan_for(
    profiles: list[tuple[str, Profile]], reference_cached: bool | None, refresh: bool
) -> Plan:
    """The plan on this machine: its cores and memory decide side by side or in sequence."""
    from qgate.run.plan import make_plan, memory_shares, sequence_reason
    from qgate.runtime.capabilities import engine_on_cpu
    from qgate.runtime.cores import bind_spec, usable_cores

    first = profiles[0][1]
    cores = usable_cores()
    # side by side on the CPU only where the profile targets it (a GPU profile on a CPU
    # build of vLLM runs as written, one server at a time)
    on_cpu = first.target.accelerator.lower() == "cpu" and engine_on_cpu(first)
    why = sequence_reason(
        profiles,
        reference_cached=reference_cached,
        refresh=refresh,
        on_cpu=on_cpu,
        cores=len(cores),
        available_gib=_available_gib(),
        kv_cache_gib=_kv_cache_gib(first),
    )
    side_by_side = None
    if why is None and on_cpu:
        half = len(cores) // 2
        side_by_side = (
            f"cores {bind_spec(cores[:half])} (of {len(cores)})",
            f"cores {bind_spec(cores[half : half * 2])} (of {len(cores)})",
        )
    elif why is None:
        shares = memory_shares(first)
        assert shares is not None  # sequence_reason found them
        device = f"{first.target.accelerator} 0"
        side_by_side = (
            f"{device}, {shares[0]:.0%} of its memory",
            f"{device}, {shares[1]:.0%} of its memory, started once the reference is ready",
        )
    out = make_plan(
        profiles,
        reference_cached=reference_cached,
        placement=placement(first),
        refresh=refresh,
        side_by_side=side_by_side,
    )
    for name, profile in profiles:
        if profile.attribution is not None and profile.attribution.enabled:
            _attribution_life(out, name, profile)
    if why is not None and first.engine.placement == "together":
        out.notes.append(f"engine.placement 'together' cannot apply here ({why}): in sequence")
    elif why is not None and out.lives and on_cpu:
        out.notes.append(f"in sequence: {why}")
    return out


def _attribution_life(out: Plan, name: str, profile: Profile) -> None:
    """The lives attribution may take, after the candidate's (once per candidate)."""
    side = f"{name} attribution"
    if any(life.side == side for life in out.lives):
        return
    lives = profile.attribution.max_lives if profile.attribution else 8
    out.lives.append(
        Life(
            side=side,
            placement=placement(profile),
            serves=["sub-candidates, one life each: quality suites, gates (no perf)"],
            condition=f"when {name} fails its gates; up to {lives} lives",
        )
    )
    changes = changes_of(profile, profile.attribution.groups if profile.attribution else [])
    out.notes.append(f"{side}: {budget_note(len(changes), lives)}")


def _available_gib() -> float | None:
    """MemAvailable of /proc/meminfo in GiB (None where there is none)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        return None
    return None


def _kv_cache_gib(profile: Profile) -> float:
    from qgate.runtime.command import CPU_KVCACHE_DEFAULT, CPU_KVCACHE_ENV

    sizes = [profile.engine_of(r).env.get(CPU_KVCACHE_ENV) for r in ("reference", "candidate")]
    sizes += [getattr(profile, r).env.get(CPU_KVCACHE_ENV) for r in ("reference", "candidate")]
    try:
        return max(float(s) for s in [*sizes, CPU_KVCACHE_DEFAULT] if s)
    except ValueError:
        return float(CPU_KVCACHE_DEFAULT)


def plan(runs: RunSet) -> Plan:
    """The run plan (qgate/run/plan.py): every life, decided before any starts; logged."""
    import logging

    from qgate.run.plan import describe

    profiles = list(zip(runs.names, (c.profile for c in runs.candidates), strict=True))
    refresh = runs.reference.opts.refresh_reference
    out = plan_for(profiles, reference_cached(runs.reference), refresh)
    for name, ctx in zip(runs.names, runs.candidates, strict=True):
        if attribution_wanted(ctx):  # --attribute, where the profile does not ask for it
            _attribution_life(out, name, ctx.profile)
    log = logging.getLogger("qgate")
    for line in describe(out):
        log.info("%s", line)
    return out


def attribution_wanted(ctx: RunContext) -> bool:
    """`--attribute`, or the profile's `attribution:` block enabled."""
    spec = ctx.profile.attribution
    return ctx.opts.attribute or (spec is not None and spec.enabled)


def attribute_failures(
    runs: RunSet, reference: QualityOutput, results: list[CandidateResult], clock: StageClock
) -> None:
    """For each failing candidate where attribution is asked: its attribution, in `results`."""
    import logging

    from qgate.quality.gates import overall_passed
    from qgate.run.attribute import attribute
    from qgate.run.reference import complete

    log = logging.getLogger("qgate")
    for index, (ctx, result) in enumerate(zip(runs.candidates, results, strict=True)):
        if not attribution_wanted(ctx) or result.error or result.quality is None:
            continue
        if overall_passed(result.verdicts):
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
