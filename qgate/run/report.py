"""The last stage of a run: build, redact, sign and write the report; the outcome for the CLI.

One candidate: the single report (its predicate type and format as ever); several: the
multi report, which holds each candidate's single report and the table across them. What the
earlier stages found comes in as arguments: the machine (`Fingerprinted`) and where the
reference's quality came from (`ReferenceSource`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from qgate.core.plan import Plan
from qgate.core.provenance import RunProvenance, run_provenance
from qgate.core.serving import ServerStart
from qgate.errors import ExitCode
from qgate.gates.judgement import Evidence, PerfStatus, failed_answers, probes_failed
from qgate.gates.scales import warning_lines
from qgate.perf.records import ScenarioRun
from qgate.quality.stage import QualityOutput
from qgate.report.assemble import build_multi_report, build_report
from qgate.report.attribution import summary_lines
from qgate.report.derive import time_breakdown
from qgate.report.inputs import ReportInputs
from qgate.report.model import Report
from qgate.report.multi_model import CandidateEntry, CandidateVerdict
from qgate.report.render.floor_view import floor_line
from qgate.report.render.ladder_view import cliff_line
from qgate.report.signing import subjects_for
from qgate.report.writer import write_report
from qgate.run.candidate import CandidateResult, perf_with_baseline
from qgate.run.context import Fingerprinted, RunContext, RunSet
from qgate.run.lives import Lives
from qgate.run.options import RunOptions, RunOutcome
from qgate.run.reference import ReferenceSource

__all__ = [
    "build",
    "capability_notes",
    "exit_code_of",
    "headline",
    "report",
    "report_of",
    "write_multi",
    "write_single",
]


def report(
    runs: RunSet,
    found: Fingerprinted,
    source: ReferenceSource,
    reference: QualityOutput,
    results: Sequence[CandidateResult],
    ref_perf: list[ScenarioRun],
    timings: dict[str, float],
    plan: Plan | None = None,
) -> RunOutcome:
    """The report of the run, single or multi, and the outcome for the CLI."""
    if runs.multi is None:
        (result,) = results  # one candidate: its runtime failure ended the run
        with_baseline = perf_with_baseline(result, ref_perf)
        return write_single(
            runs.reference, found, source, reference, result, with_baseline, timings, plan
        )
    reports = [
        report_of(ctx, found, source, result, reference, ref_perf, timings)
        for ctx, result in zip(runs.candidates, results, strict=True)
    ]
    return write_multi(runs, found, source, results, reports, timings, plan)


def report_of(
    ctx: RunContext,
    found: Fingerprinted,
    source: ReferenceSource,
    result: CandidateResult,
    reference: QualityOutput,
    ref_perf: list[ScenarioRun],
    timings: dict[str, float],
) -> Report | None:
    """The single-candidate report of this candidate; None when its runtime failed."""
    if result.quality is None or result.error is not None:
        return None
    single: dict[str, float] = {}
    for key, seconds in timings.items():  # in stage order; every candidate's time is its own
        if key.startswith("candidate:"):
            single.setdefault("candidate", result.seconds)
        else:
            single[key] = seconds
    return build(
        ctx, found, source, reference, result, perf_with_baseline(result, ref_perf), single
    )


def write_single(
    ctx: RunContext,
    found: Fingerprinted,
    source: ReferenceSource,
    reference: QualityOutput,
    result: CandidateResult,
    perf_runs: list[ScenarioRun],
    timings: dict[str, float],
    plan: Plan | None = None,
) -> RunOutcome:
    """Build, redact, sign and write the report and its views; the outcome for the CLI."""
    unsigned = build(ctx, found, source, reference, result, perf_runs, timings, plan)
    written = write_report(
        ctx.run_dir,
        unsigned,
        subjects_for(ctx.profile_path, found.fingerprint, ctx.profile_sha256),
        ctx.signer,
        extra_secret_names=ctx.profile.secrets,
        step_summary="GITHUB_STEP_SUMMARY" in os.environ,
    )
    rep = written.report
    return RunOutcome(
        run_dir=ctx.run_dir,
        envelope=written.envelope,
        verdict=rep.verdict,
        exit_code=exit_code_of(rep.verdict),
        verdicts=rep.all_verdicts(),
        perf_status=result.status,
        headline=headline(rep),
        engine_warnings=warning_lines(rep.effective_configs),
        public_key=ctx.signer.public_key_path,
        reference_cached=source.cached,
        warnings=rep.warnings,
        capability_notes=rep.capability_notes,
        time=time_lines(time_breakdown(rep)),
        attribution=summary_lines(rep.attribution),
        cliff=cliff_line(rep),
        floor=floor_line(rep),
    )


def time_lines(rows: Sequence[tuple[str, float]]) -> list[str]:
    """'  46 s  start-up: ...' lines, seconds right-aligned."""
    return [f"{seconds:6.0f} s  {what}" for what, seconds in rows]


def build(
    ctx: RunContext,
    found: Fingerprinted,
    source: ReferenceSource,
    reference: QualityOutput,
    result: CandidateResult,
    perf_runs: list[ScenarioRun],
    timings: dict[str, float],
    plan: Plan | None = None,
) -> Report:
    """The unsigned report of one candidate against the reference."""
    candidate = result.quality
    assert candidate is not None  # a candidate whose runtime failed has no report of its own
    configs = [c for c in (reference.effective_config, candidate.effective_config) if c]
    evidence = Evidence(
        runs=tuple(reference.runs + candidate.runs),
        divergence=result.divergence,
        passes=tuple(reference.passes + candidate.passes),
        speculative=tuple(reference.speculative + candidate.speculative),
        configs=tuple(configs),
        noise_floor=reference.floor,
        perf_runs=tuple(perf_runs),
        life_probes=tuple(p for p in ctx.probing.records if p.side in ("reference", ctx.side)),
        host=found.fingerprint.hostname if found.fingerprint is not None else None,
        status=result.status,
    )
    return build_report(
        ReportInputs(
            # The profile as written (fallbacks included): the same on every machine, so
            # `verify --profile FILE` compares like with like; capability_notes say what ran.
            profile=ctx.declared_profile,
            profile_sha256=ctx.profile_sha256,
            fingerprint=found.fingerprint,
            evidence=evidence,
            verdicts=tuple(result.verdicts),
            judged_with=ctx.profile,
            target_mismatches=tuple(found.target_mismatches),
            capability_notes=tuple(ctx.selection.notes),
            stage_timings=timings,
            plan=plan,
            starts=tuple(s for s in ctx.starts if s.side in ("reference", ctx.side)),
            reference_provenance=source.provenance,
            provenance=provenance_of(ctx.opts, ctx.lives),
            attribution=result.attribution,
        )
    )


def provenance_of(opts: RunOptions, lives: Lives) -> RunProvenance | None:
    """The CI job this process runs in (its own variables), the run's --metadata, and the
    cluster its lives ran on when an executor placed them (qgate/cluster/lives.py)."""
    return run_provenance(os.environ, opts.metadata, lives.provenance())


def headline(rep: Report) -> list[str]:
    """One line per scenario: the candidate/reference ratios people look at first."""
    wanted = {
        "output_throughput": "output tok/s",
        "ttft_ms.p50": "TTFT p50",
        "tpot_ms.p50": "TPOT p50",
        "e2e_ms.p50": "E2E p50",
    }
    lines: list[str] = []
    if rep.lives is not None and rep.lives.excluded_rounds:
        rounds = ", ".join(str(k + 1) for k in rep.lives.excluded_rounds)
        failed = [v.gate for v in rep.lives.verdicts if not v.passed]
        lines.append(
            f"round(s) {rounds} kept out of the ratios: a life failed its probes"
            f" ({', '.join(failed)})"
        )
    for result in rep.perf.results:
        if probes_failed(result.verdicts, result.scenario):
            what = failed_answers(result.verdicts, result.scenario)
            lines.append(f"{result.scenario}: ratios withheld (its graded {what} failed)")
            continue
        parts = []
        for c in result.comparisons:
            label = wanted.get(str(c.get("metric")))
            if label and c.get("ratio") is not None:
                lo, hi = c.get("ci_low"), c.get("ci_high")
                ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
                each = [r for r in c.get("round_ratios") or [] if r is not None]
                if len(each) > 1:  # perf.rounds: the ratio of each round, in order
                    ci += " (rounds " + ", ".join(f"x{r:.2f}" for r in each) + ")"
                parts.append(f"{label} x{c['ratio']:.2f}{ci}")
        if parts:
            lines.append(f"{result.scenario}: " + ", ".join(parts))
    return lines


def exit_code_of(verdict: CandidateVerdict) -> ExitCode:
    """ERROR (a required candidate's runtime failed): 3; FAIL or UNGATED: 1; INCONCLUSIVE:
    4; else 0."""
    if verdict == "ERROR":
        return ExitCode.INFRASTRUCTURE
    if verdict == "INCONCLUSIVE":
        return ExitCode.INCONCLUSIVE
    return ExitCode.GATE_FAILED if verdict in ("FAIL", "UNGATED") else ExitCode.PASS


def write_multi(
    runs: RunSet,
    found: Fingerprinted,
    source: ReferenceSource,
    results: Sequence[CandidateResult],
    reports: Sequence[Report | None],
    timings: dict[str, float],
    plan: Plan | None = None,
) -> RunOutcome:
    """Build, redact, sign and write the multi report; the outcome for the CLI."""
    ref = runs.reference
    assert runs.multi is not None
    loaded = runs.multi
    multi = loaded.multi
    entries = [
        CandidateEntry(
            name=c.name, required=c.required, description=c.description, report=rep, error=res.error
        )
        for c, res, rep in zip(multi.candidates, results, reports, strict=True)
    ]
    unsigned = build_multi_report(
        profile=multi.to_json(),
        profile_sha256=loaded.sha256,
        fingerprint=found.fingerprint,
        candidates=entries,
        stage_timings=timings,
        plan=plan,
        starts=ref.starts,
        provenance=provenance_of(ref.opts, ref.lives),
    )
    secrets = sorted({s for c in multi.candidates for s in c.profile.secrets})
    written = write_report(
        ref.run_dir,
        unsigned,
        subjects_for(ref.profile_path, found.fingerprint, loaded.sha256),
        ref.signer,
        extra_secret_names=secrets,
        step_summary="GITHUB_STEP_SUMMARY" in os.environ,
    )
    rep = written.report
    verdicts = []
    lines: list[str] = []
    heads: list[str] = []
    configs = []
    for entry in rep.candidates:
        kind = "required" if entry.required else "optional"
        if entry.report is None:
            lines.append(f"{entry.name} ({kind}): ERROR {entry.error}")
            continue
        r = entry.report
        verdicts += [
            v.model_copy(update={"gate": f"{entry.name}: {v.gate}"}) for v in r.all_verdicts()
        ]
        lines.append(f"{entry.name} ({kind}): {r.verdict}; perf {r.perf.status}")
        heads += [f"{entry.name} {line}" for line in headline(r)]
        configs += r.effective_configs
    statuses = {e.report.perf.status for e in rep.candidates if e.report is not None}
    status: PerfStatus = (
        "ran" if "ran" in statuses else next(iter(statuses), "skipped: gates failed")
    )
    return RunOutcome(
        run_dir=ref.run_dir,
        envelope=written.envelope,
        verdict=rep.verdict,
        exit_code=exit_code_of(rep.verdict),
        verdicts=verdicts,
        perf_status=status,
        headline=heads,
        engine_warnings=list(dict.fromkeys(warning_lines(configs))),
        public_key=ref.signer.public_key_path,
        reference_cached=source.cached,
        warnings=[f"{e.name}: {w}" for e in rep.candidates if e.report for w in e.report.warnings],
        capability_notes=capability_notes(runs),
        candidates=lines,
        time=time_lines(_multi_breakdown(rep.starts, rep.stage_timings)),
    )


def _multi_breakdown(
    starts: Sequence[ServerStart], timings: dict[str, float]
) -> list[tuple[str, float]]:
    """A multi run's start-ups, then its stages (each candidate's report has its own detail)."""
    rows = [
        (f"start-up {s.side}{' (preflight)' if s.purpose == 'preflight' else ''}", s.ready_s or 0.0)
        for s in starts
    ]
    rows += [(f"stage {k}", v) for k, v in timings.items()]
    rows.append(("total", sum(timings.values())))
    return [(what, round(seconds, 1)) for what, seconds in rows]


def capability_notes(runs: RunSet) -> list[str]:
    """Each side's notes once; a candidate's are named ('candidate NAME: ...')."""
    notes: list[str] = []
    for name, ctx in zip(runs.names, runs.candidates, strict=True):
        for note in ctx.selection.notes:
            if note.startswith("candidate:"):
                note = f"candidate {name}:" + note[len("candidate:") :]
            notes.append(note)
    return list(dict.fromkeys(notes))
