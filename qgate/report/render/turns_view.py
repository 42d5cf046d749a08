"""The perf section's graded session turns: accuracy by turn index on each side, and the gate.

Read from the report as stored (the records and the verdicts `verify` re-derives).
"""

from __future__ import annotations

from qgate.gates.judgement import failed_answers
from qgate.gates.turns import graded_turns, turn_accuracy, turn_correct
from qgate.perf.records import ScenarioRun
from qgate.perf.sessions import turn_kind
from qgate.report.model import Report
from qgate.report.render.parts import Table

__all__ = ["turn_lines", "turn_table"]

_WRONG_SHOWN = 3
_ASKS = {"code": "code two turns back", "total": "running total"}


def _runs(report: Report, name: str, role: str) -> list[ScenarioRun]:
    return [r for r in report.perf.runs if r.scenario == name and r.role == role]


def turn_lines(report: Report) -> list[str]:
    """What the graded sessions are, and each scenario whose graded turns failed."""
    if not graded_turns(report.perf.runs):
        return []
    out = [
        "Graded session turns: chats asked among a multi-turn scenario's load, each graded "
        "turn answerable only from earlier ones (a box's code planted two turns back, a "
        "running total), the history re-sent each turn so the prefix cache serves it; paired "
        "per turn with the reference's answers (turn indexes from 0). The figures leave them "
        "out."
    ]
    for result in report.perf.results:
        if failed_answers(result.verdicts, result.scenario) != "turns":
            continue
        wrong = [
            f"{r.graded_turn} answered {r.probe_answer or 'nothing'} (truth {r.probe_truth})"
            for r in graded_turns(_runs(report, result.scenario, "candidate"))
            if not turn_correct(r)
        ]
        shown = "; ".join(wrong[:_WRONG_SHOWN]) + (" ..." if len(wrong) > _WRONG_SHOWN else "")
        out.append(
            f"GRADED TURNS FAILED in {result.scenario}: its ratios are withheld from the "
            f"headline and the speed gates (kept in the records); candidate: {shown}"
        )
    return out


def _cached(runs: list[ScenarioRun], index: int) -> str:
    """Share of the prompt tokens of turn `index` (every session's, planting turns too) that
    the server said its prefix cache served; '–' where usage did not say."""
    turns = [
        r
        for run in runs
        for r in run.requests
        if r.graded_turn is not None and r.turn == index and r.cached_prompt_tokens is not None
    ]
    prompt = sum(r.prompt_tokens or 0 for r in turns)
    return (
        f"{100 * sum(r.cached_prompt_tokens or 0 for r in turns) / prompt:.0f}%" if prompt else "–"
    )


def turn_table(report: Report) -> Table | None:
    """Per scenario and graded turn index: right/asked on each side, the share of its
    prompts the candidate's prefix cache served, and the scenario's gate."""
    rows = []
    for result in report.perf.results:
        name = result.scenario
        ref = turn_accuracy(_runs(report, name, "reference"))
        cand = turn_accuracy(_runs(report, name, "candidate"))
        gates = [v for v in result.verdicts if v.gate.startswith(f"perf.{name}.turns.")]
        verdict = "–" if not gates else ("PASS" if all(v.passed for v in gates) else "FAIL")
        for index in sorted(ref.keys() | cand.keys()):
            r_ok, r_n = ref.get(index, (0, 0))
            c_ok, c_n = cand.get(index, (0, 0))
            what = f"{index} ({_ASKS[turn_kind(index)]})"
            cached = _cached(_runs(report, name, "candidate"), index)
            rows.append([name, what, f"{r_ok}/{r_n}", f"{c_ok}/{c_n}", cached, verdict])
    if not rows:
        return None
    header = ["Scenario", "Turn", "Reference right/asked", "Candidate right/asked"]
    header += ["Candidate prompt cached", "Turn gate"]
    return Table(header, rows, caption="Graded session turns by turn index")
