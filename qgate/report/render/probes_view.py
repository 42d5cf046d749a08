"""The perf section's graded probes: per scenario, both sides' probe grades and the gate.

Read from the report as stored (the records and the verdicts `verify` re-derives): the items
lost and judged are the probe gate's own figures (its max_flips verdict), never paired here
again.
"""

from __future__ import annotations

from qgate.gates.judgement import ScenarioResult, failed_answers
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


def _lost(result: ScenarioResult) -> str:
    """'lost/judged' as the probe gate counted them (its max_flips verdict); '–' where it
    paired nothing (no gate, or a side that asked no probe)."""
    gate = f"perf.{result.scenario}.probes.max_flips"
    v = next((v for v in result.verdicts if v.gate == gate), None)
    return "–" if v is None or v.observed is None else f"{v.observed:.0f}/{v.n}"


def probe_table(report: Report) -> Table | None:
    """Per scenario: probes right/asked on each side, items lost of those judged, the gate."""
    rows = []
    for result in report.perf.results:
        name = result.scenario
        ref_ok, ref_n = _asks(_runs(report, name, "reference"))
        cand_ok, cand_n = _asks(_runs(report, name, "candidate"))
        if not ref_n and not cand_n:
            continue
        gates = [v for v in result.verdicts if v.gate.startswith(f"perf.{name}.probes.")]
        verdict = "–" if not gates else ("PASS" if all(v.passed for v in gates) else "FAIL")
        rows.append([name, f"{ref_ok}/{ref_n}", f"{cand_ok}/{cand_n}", _lost(result), verdict])
    if not rows:
        return None
    header = ["Scenario", "Reference right/asked", "Candidate right/asked", "Lost/judged"]
    return Table([*header, "Probe gate"], rows, caption="Graded probes under load")
