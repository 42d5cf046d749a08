"""The last stage of a run: build, redact, sign and write the report; the outcome for the CLI."""

from __future__ import annotations

import os

from qgate.core.verdict import Verdict
from qgate.errors import ExitCode
from qgate.perf.records import ScenarioRun
from qgate.quality.records import DivergenceRun
from qgate.quality.stage import QualityOutput
from qgate.report.model import PerfStatus, Report
from qgate.run.context import RunContext
from qgate.run.options import RunOutcome

__all__ = ["build", "headline", "report"]


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
    from qgate.report.signing import subjects_for
    from qgate.report.writer import write_report
    from qgate.runtime.scales import warning_lines

    unsigned = build(ctx, reference, candidate, divergence, verdicts, status, perf_runs, timings)
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


def build(
    ctx: RunContext,
    reference: QualityOutput,
    candidate: QualityOutput,
    divergence: DivergenceRun | None,
    verdicts: list[Verdict],
    status: PerfStatus,
    perf_runs: list[ScenarioRun],
    timings: dict[str, float],
) -> Report:
    """The unsigned report of one candidate against the reference."""
    from qgate.quality.effect import no_effect_message
    from qgate.report.assemble import build_report

    configs = [c for c in (reference.effective_config, candidate.effective_config) if c]
    no_effect = no_effect_message(reference.runs + candidate.runs, divergence)
    warnings = [no_effect] if no_effect and ctx.profile.quality.on_no_effect == "warn" else []
    return build_report(
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
