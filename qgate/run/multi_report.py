"""The report stage of a multi-candidate run: one signed report, the outcome for the CLI."""

from __future__ import annotations

import os
from collections.abc import Sequence

from qgate.errors import ExitCode
from qgate.report.model import PerfStatus, Report
from qgate.report.multi_model import CandidateEntry, CandidateVerdict
from qgate.run.multi_context import CandidateResult, MultiContext
from qgate.run.options import RunOutcome

__all__ = ["exit_code_of", "write_multi"]


def exit_code_of(verdict: CandidateVerdict) -> ExitCode:
    """ERROR (a required candidate's runtime failed): 3; FAIL or UNGATED: 1; else 0."""
    if verdict == "ERROR":
        return ExitCode.INFRASTRUCTURE
    return ExitCode.GATE_FAILED if verdict in ("FAIL", "UNGATED") else ExitCode.PASS


def write_multi(
    mctx: MultiContext,
    results: Sequence[CandidateResult],
    reports: Sequence[Report | None],
    timings: dict[str, float],
) -> RunOutcome:
    """Build, redact, sign and write the multi report; the outcome for the CLI."""
    from qgate.report.multi_writer import build_multi_report, write_multi_report
    from qgate.report.signing import subjects_for
    from qgate.run.report import headline
    from qgate.runtime.scales import warning_lines

    ref = mctx.reference
    multi = mctx.loaded.multi
    entries = [
        CandidateEntry(
            name=c.name, required=c.required, description=c.description, report=rep, error=res.error
        )
        for c, res, rep in zip(multi.candidates, results, reports, strict=True)
    ]
    unsigned = build_multi_report(
        profile=multi.to_json(),
        profile_sha256=mctx.loaded.sha256,
        fingerprint=ref.fingerprint,
        candidates=entries,
        stage_timings=timings,
    )
    secrets = sorted({s for c in multi.candidates for s in c.profile.secrets})
    written = write_multi_report(
        ref.run_dir,
        unsigned,
        subjects_for(ref.profile_path, ref.fingerprint),
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
        reference_cached=ref.reference_cached,
        warnings=[f"{e.name}: {w}" for e in rep.candidates if e.report for w in e.report.warnings],
        capability_notes=_capability_notes(mctx),
        candidates=lines,
    )


def _capability_notes(mctx: MultiContext) -> list[str]:
    """Each side's notes once; a candidate's are named ('candidate NAME: ...')."""
    notes: list[str] = []
    for cand, ctx in zip(mctx.loaded.multi.candidates, mctx.candidates, strict=True):
        for note in ctx.selection.notes:
            if note.startswith("candidate:"):
                note = f"candidate {cand.name}:" + note[len("candidate:") :]
            notes.append(note)
    return list(dict.fromkeys(notes))
