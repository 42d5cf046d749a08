"""The perf section's graded probes: per scenario, both sides' probe grades and the gate.

Read from the report as stored (the records and the verdicts `verify` re-derives).
"""

from __future__ import annotations

from qgate.gates.probes import failed_answers, lost_at_light_load, probe_suite
from qgate.perf.probes import graded
from qgate.perf.records import ScenarioRun
from qgate.report.model import Report
from qgate.report.render.parts import Table

__all__ = ["probe_lines", "probe_table"]

_WRONG_SHOWN = 3


def _runs(report: Report, name: str, role: str) -> list[ScenarioRun]:
    return [r for r in report.perf.runs if r.scenario == name and r.role == role]


def _asks(runs: list[ScenarioRun]) -> tuple[int, int]:
    probes = [r for run in runs for r in run.requests if r.probe_id and r.probe_truth]
    return sum(1 for r in probes if graded(r)), len(probes)


def probe_lines(report: Report) -> list[str]:
    """What the figures include, and each scenario whose probes failed (ratios withheld)."""
    if not any(r.probe_id and r.probe_truth for run in report.perf.runs for r in run.requests):
        return []
    out = [
        "Graded probes: math items the reference answered correctly in its quality stage, "
        "asked among every scenario's requests with the quality suites' sampling and graded "
        "against each item's known answer (no number: wrong); an item the candidate already "
        "lost in its quality stage is left to the quality gates. The figures above and below "
        "leave the probe requests out, though the server served them with the load."
    ]
    for result in report.perf.results:
        if failed_answers(result.verdicts, result.scenario) == "probes":
            wrong = [
                f"{r.probe_id} answered {r.probe_answer or 'no number'} (truth {r.probe_truth})"
                for run in _runs(report, result.scenario, "candidate")
                for r in run.requests
                if r.probe_id and r.probe_truth and not graded(r)
            ]
            shown = "; ".join(wrong[:_WRONG_SHOWN]) + (" ..." if len(wrong) > _WRONG_SHOWN else "")
            out.append(
                f"PROBES FAILED in {result.scenario}: its ratios are withheld from the headline "
                f"and the speed gates (kept in the records); candidate: {shown or 'no probes'}"
            )
    return out


def probe_table(report: Report) -> Table | None:
    """Per scenario: probes right/asked on each side, items lost and gained, the gate."""
    rows = []
    for result in report.perf.results:
        name = result.scenario
        refs, cands = _runs(report, name, "reference"), _runs(report, name, "candidate")
        ref_ok, ref_n = _asks(refs)
        cand_ok, cand_n = _asks(cands)
        if not ref_n and not cand_n:
            continue
        skip = lost_at_light_load(cands)
        ref = probe_suite(name, "reference", refs, skip)
        cand = probe_suite(name, "candidate", cands, skip)
        lost = gained = "–"
        if ref is not None and cand is not None:
            mine = {i.id: i.correct for i in cand.items}
            pairs = [(i.correct, mine[i.id]) for i in ref.items if i.id in mine]
            lost = str(sum(1 for a, b in pairs if a and not b))
            gained = str(sum(1 for a, b in pairs if b and not a))
        gates = [v for v in result.verdicts if v.gate.startswith(f"perf.{name}.probes.")]
        verdict = "–" if not gates else ("PASS" if all(v.passed for v in gates) else "FAIL")
        rows.append([name, f"{ref_ok}/{ref_n}", f"{cand_ok}/{cand_n}", lost, gained, verdict])
    if not rows:
        return None
    header = ["Scenario", "Reference right/asked", "Candidate right/asked", "Lost", "Gained"]
    return Table([*header, "Probe gate"], rows, caption="Graded probes under load")
