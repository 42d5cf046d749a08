"""The one judge (gates/judge.py, issue 54 item 1): a candidate's evidence in, every verdict
group out; `qgate run` stores its judgement and `qgate verify` makes it again from the
report's evidence, so no verdict group is assembled anywhere else."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest
from helpers.calls import GATE_FAMILIES, called
from helpers.resign import example_report

from qgate.core.bounds import loss_upper
from qgate.gates.judge import judge, perf_status, quality_verdicts
from qgate.gates.judgement import Derivation, Evidence
from qgate.profile import Profile
from qgate.report.model import Report
from qgate.report.verify.machine import as_run
from qgate.report.verify.recompute import (
    default_recompute,
    dump,
    evidence_of,
    judged_of,
    same_value,
)

ROOT = Path(__file__).resolve().parents[3]
# a committed run with reuse passes, graded probes and lives
EXAMPLE = ROOT / "examples" / "h200" / "kv-offload-envelope"


@pytest.fixture(scope="module")
def report() -> Report:
    return example_report(EXAMPLE)


def test_the_judge_remakes_every_group_the_run_stored(report: Report) -> None:
    """Over the report's own evidence, by its derivations, the judge gives back every derived
    group the run stored: quality verdicts, scenario figures and verdicts, lives, speed gates,
    warnings and the overall verdict."""
    profile = Profile.model_validate(report.profile)
    judged = judged_of(report, profile, default_recompute(), judged_with=as_run(report, profile))
    assert report.lives is not None and report.perf.results  # lives and scenarios exercised
    # floats up to verify's tolerance: a power computed on another CPU kind (AVX2 against
    # AVX-512) may differ in its last bit
    assert same_value(dump(judged.quality), dump(report.quality.verdicts))
    assert same_value(dump(judged.scenarios), dump(report.perf.results))
    assert same_value(dump(judged.lives), dump(report.lives))
    assert same_value(dump(judged.speed), dump(report.perf.gates))
    assert judged.warnings == report.warnings
    assert judged.verdict == report.verdict
    assert same_value(dump(judged.all_verdicts()), dump(report.all_verdicts()))


def test_a_judgement_follows_its_evidence_not_the_stored_verdicts(report: Report) -> None:
    """One lost probe answer in the evidence changes the judgement: the scenario's probe gate
    and the overall verdict come from the records, never from what a report says of them."""
    profile = Profile.model_validate(report.profile)
    evidence = evidence_of(report)
    derivation = Derivation(quality=report.quality.derivation, perf=report.perf.derivation)
    before = judge(profile, evidence, derivation, judged_with=as_run(report, profile))
    runs = [r.model_copy(deep=True) for r in evidence.perf_runs]
    probe = next(
        q for r in runs if r.role == "candidate" for q in r.requests if q.probe_truth is not None
    )
    probe.probe_answer = "-1"  # answered wrong
    probe.text = "The answer is -1"
    changed = evidence.model_copy(update={"perf_runs": tuple(runs)})
    after = judge(profile, changed, derivation, judged_with=as_run(report, profile))
    assert same_value(dump(after.quality), dump(before.quality))  # the evidence did not move
    moved = [
        (a.gate, a.observed, b.observed)
        for x, y in zip(before.scenarios, after.scenarios, strict=True)
        for a, b in zip(x.verdicts, y.verdicts, strict=True)
        if a.observed != b.observed
    ]
    assert moved and all("probe" in gate for gate, _, _ in moved), moved


def test_evidence_is_one_frozen_value_of_raw_observations() -> None:
    """Evidence cannot be edited in place, and holds no derived field: its fields are the
    raw records a report signs (the fingerprint's hostname among them, where a life ran
    without a node of its own, and the perf status the run decided, which the judge holds
    to the verdicts)."""
    evidence = Evidence()
    with pytest.raises(pydantic.ValidationError):
        evidence.runs = ()  # type: ignore[misc]
    assert set(Evidence.model_fields) == {
        "runs",
        "divergence",
        "passes",
        "speculative",
        "configs",
        "noise_floor",
        "perf_runs",
        "life_probes",
        "host",
        "status",
    }


def test_the_perf_status_is_held_to_the_quality_verdicts(report: Report) -> None:
    """The judge's `perf_status` is the rule the run decided by and verify checks."""
    verdicts = report.quality.verdicts
    failed = [verdicts[0].model_copy(update={"passed": False})]
    assert perf_status(verdicts, skip_perf=False, force_perf=False) == "ran"
    assert perf_status(failed, skip_perf=False, force_perf=False) == "skipped: gates failed"
    assert perf_status(failed, skip_perf=False, force_perf=True) == "ungated"
    unsure = [failed[0].model_copy(update={"inconclusive": True})]
    assert perf_status(unsure, skip_perf=False, force_perf=False) == "skipped: gates inconclusive"


# What makes a verdict group, a gate family's verdicts or the overall verdict: called by the
# judge (and the gate modules it is made of), nowhere else.
MAKERS = GATE_FAMILIES | {
    "candidate_verdicts",
    "scenario_gates",
    "life_verdicts",
    "excluded_rounds",
    "report_gates",
    "evaluate_perf_gates",
    "quality_warnings",
    "change_warnings",
    "overall",
    "perf_results",
    "lives_judged",
    "warnings_of",
}
ALLOWED = {
    # `qgate perf`: one server measured alone, no candidate judged (its output says UNGATED)
    ("qgate/cli/perf.py", "scenario_verdicts"),
    # attribution trials of quality derivation < 4: the suites' gates alone, as run made them
    ("qgate/report/verify/attribution.py", "evaluate_quality"),
}


def _calls(path: Path) -> set[str]:
    return called(path.read_text(encoding="utf-8"))


def test_no_verdict_group_is_made_outside_the_judge() -> None:
    """Outside qgate/gates/, run, report, verify and the views call `judge` (or its first
    group, `quality_verdicts`, which decides the perf stage), never a group maker."""
    found = []
    for path in sorted((ROOT / "qgate").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("qgate/gates/"):
            continue
        found += [(rel, name) for name in _calls(path) & MAKERS if (rel, name) not in ALLOWED]
    assert found == []


def test_a_maker_call_is_seen(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("def f(fns):\n    return overall(1) + fns.report_gates(2) + judge(3)\n")
    assert _calls(source) & MAKERS == {"overall", "report_gates"}


def test_the_judge_bounds_a_loss_by_the_derivation_it_judges_by() -> None:
    """The CPU demo was signed at quality derivation 5: its math suites' bound over 81 items
    is Tango's plain one, and the judge gives it back at 5; at 6 it gives the corrected bound
    (wider), and at 40 items (recall) the exact one at both."""
    report = example_report(ROOT / "examples" / "cpu" / "smollm2-cpu-int8-demo")
    profile = Profile.model_validate(report.profile)
    ran, evidence = as_run(report, profile), evidence_of(report)
    stored = {v.gate: v for v in report.quality.verdicts if v.gate.endswith("max_drop")}
    old, new = (
        {v.gate: v for v in quality_verdicts(ran, evidence, Derivation(quality=q))} for q in (5, 6)
    )
    short = "math.short.max_drop"
    assert stored[short].n == 81
    assert old[short].observed == pytest.approx(stored[short].observed, rel=1e-9)
    assert new[short].observed == pytest.approx(loss_upper(0, 3, 81, 1 - 0.0167))
    assert new[short].observed > old[short].observed and new[short].passed
    recall = "recall.512.max_drop"
    assert old[recall].observed == new[recall].observed == stored[recall].observed
