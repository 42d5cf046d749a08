"""The report's views read the judge's verdicts (issue 54 item 1), never decide again.

A view module (qgate/report/render/) imports from `qgate.gates` only the judge's own output,
`qgate.gates.judgement`: its models, its derivation numbers and the readers of a scenario's
stored verdicts. A figure a verdict decided is read from the verdict the report stores. The
few other names a view takes from `qgate.gates` are listed below with why: RAW, readers of
raw records that decide nothing; UNREPLACED, a deciding call the report holds no signed field
for. Both lists may only shrink: an entry no view imports any more fails until removed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

RENDER = Path(__file__).resolve().parents[4] / "qgate" / "report" / "render"
JUDGE = "qgate.gates.judgement"

RAW: dict[tuple[str, str], str] = {
    ("reuse_view.py", "qgate.gates.reuse.STRICT"): "a derivation number: how the counters "
    "around a pass are read (quality.reuse_records.shares), not a verdict",
    ("reuse_view.py", "qgate.gates.reuse.self_flips"): "one side's cold-against-pass counts "
    "(lost, gained, changed) from its item records; the gate decides on the two sides' "
    "difference, which its verdict holds",
    ("spec_view.py", "qgate.gates.speculative.Acceptance"): "the counters' arithmetic (drafts, "
    "accepted, per position) over the raw snapshots",
    ("spec_view.py", "qgate.gates.speculative.acceptance"): "the counters' arithmetic over the "
    "raw snapshots; the gate's verdict holds the acceptance length it judged",
    ("turns_view.py", "qgate.gates.turns.graded_turns"): "selects the graded-turn records",
    ("turns_view.py", "qgate.gates.turns.turn_correct"): "one record's grade against its "
    "truth, as qgate.perf.probes.graded is a probe's (a view shows the wrong answers)",
    ("turns_view.py", "qgate.gates.turns.turn_accuracy"): "right/asked by turn index over the "
    "records, a figure no gate judges (the gate pairs turns by id)",
    ("view.py", "qgate.gates.scales.warning_lines"): "the engines' own logged warnings, "
    "formatted with their side",
}
UNREPLACED: dict[tuple[str, str], str] = {
    ("reuse_view.py", "qgate.gates.changes_applied.confirm_changes"): "the changes table "
    "(each change CONFIRMED or UNCONFIRMED, with its evidence): the report signs only the "
    "warning and the contradicted verdicts it leads to, and a new signed field would change "
    "every report's signed bytes",
}


def _gate_imports(source: str) -> list[str]:
    """`qgate.gates...` names a module imports, as 'module.name' (or the module itself)."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("qgate.gates"):
            out += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("qgate.gates")]
    return out


def _not_the_judges(source: str) -> list[str]:
    return [n for n in _gate_imports(source) if not n.startswith(f"{JUDGE}.")]


VIEWS = sorted(p.name for p in RENDER.glob("*.py"))


@pytest.mark.parametrize("view", VIEWS)
def test_a_view_imports_no_deciding_gate(view: str) -> None:
    taken = _not_the_judges((RENDER / view).read_text())
    unlisted = [n for n in taken if (view, n) not in RAW and (view, n) not in UNREPLACED]
    assert not unlisted, (
        f"{view} takes {unlisted} from the gates: read the verdict the judge stored instead"
    )


@pytest.mark.parametrize(("view", "name"), sorted(RAW) + sorted(UNREPLACED))
def test_a_listed_import_is_still_made(view: str, name: str) -> None:
    assert name in _gate_imports((RENDER / view).read_text()), f"take ({view}, {name}) off"


def test_a_deciding_import_is_seen() -> None:
    """The check fails for a view that pairs the probes again (it can fail)."""
    source = (
        "from qgate.gates.judgement import ScenarioResult, failed_answers\n"
        "from qgate.gates.probes import lost_at_light_load, probe_suite\n"
        "import qgate.gates.turns\n"
    )
    assert _not_the_judges(source) == [
        "qgate.gates.probes.lost_at_light_load",
        "qgate.gates.probes.probe_suite",
        "qgate.gates.turns",
    ]
