"""One verdict assembly: the judge (gates/judge.py), which `qgate run` and `qgate verify` both
call, makes a candidate's and a perf scenario's verdicts with the same two functions
(gates/assembly.py), so the verdicts the run writes are the ones verify recomputes from the
same records."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers.calls import GATE_FAMILIES
from helpers.calls import called as called_in
from helpers.resign import example_report

from qgate.gates import assembly as gate_assembly
from qgate.gates.assembly import candidate_verdicts, scenario_gates
from qgate.gates.judge import perf_results
from qgate.gates.judgement import PERF_DERIVATION, QUALITY_DERIVATION
from qgate.perf.blocks import pooled
from qgate.profile import Profile
from qgate.quality.noise_floor import floor_summary
from qgate.quality.stage import QualityOutput
from qgate.report.model import Report
from qgate.report.verify.recompute import (
    default_recompute,
    dump,
    recompute_perf,
    recompute_quality,
    same_value,
)
from qgate.run import candidate

ROOT = Path(__file__).resolve().parents[3]
# a committed run of the current derivations, with reuse passes and graded probes
EXAMPLE = ROOT / "examples" / "h200" / "kv-offload-envelope"


@pytest.fixture(scope="module")
def report() -> Report:
    r = example_report(EXAMPLE)
    assert (r.quality.derivation, r.perf.derivation) == (4, 9)
    # perf derivation 10 changed only whom a life probe is judged against (gates/life.py),
    # which this module does not judge, and quality derivation 5 only adds the cross-check of
    # a speculating candidate, which this run has not: it is held to the current derivations
    r = r.model_copy(
        update={
            "quality": r.quality.model_copy(update={"derivation": QUALITY_DERIVATION}),
            "perf": r.perf.model_copy(update={"derivation": PERF_DERIVATION}),
        }
    )
    assert r.quality.passes and r.perf.results  # the reuse and probe families are exercised
    return r


def _side(report: Report, role: str) -> QualityOutput:
    """One side's quality output as the run held it, rebuilt from the report's records."""
    q = report.quality
    return QualityOutput(
        role=role,  # type: ignore[arg-type]
        runs=[r for r in q.runs if r.role == role],
        effective_config=next((c for c in report.effective_configs if c.role == role), None),
        passes=[p for p in q.passes if p.role == role],
        speculative=[s for s in q.speculative if s.role == role],
        floor=q.noise_floor if role == "reference" else None,
    )


def test_run_judges_what_verify_recomputes(report: Report, monkeypatch: Any) -> None:
    """The run's `judge` over the two sides' records gives the stored verdicts, and verify's
    recomputation of those records accepts them: both are `candidate_verdicts`."""
    profile = Profile.model_validate(report.profile)
    monkeypatch.setattr(candidate, "divergence_of", lambda ref, cand: report.quality.divergence)
    ref, cand = _side(report, "reference"), _side(report, "candidate")
    out = candidate.CandidateResult(name="candidate", quality=cand)
    ctx = SimpleNamespace(profile=profile, no_perf=False)
    candidate.judge(ctx, out, ref, force_perf=False)  # type: ignore[arg-type]
    # floats up to verify's tolerance: a power computed on another CPU kind may differ in its
    # last bit (AVX2 against AVX-512)
    assert same_value(dump(out.verdicts), dump(report.quality.verdicts))
    recompute_quality(report, profile, default_recompute())  # raises on any difference
    q = report.quality
    again = candidate_verdicts(
        profile,
        q.runs,
        q.divergence,
        q.passes,
        report.effective_configs,
        q.speculative,
        q.noise_floor,
        derivation=q.derivation,
    )
    assert again == out.verdicts


def test_verify_recomputes_with_the_assembly(report: Report, monkeypatch: Any) -> None:
    """verify's quality and perf recomputation go through the assembly: a gate family added
    there shows up in what verify expects (and fails a report that lacks it)."""
    profile = Profile.model_validate(report.profile)
    extra = report.quality.verdicts[0].model_copy(update={"gate": "extra.gate"})
    real = gate_assembly.candidate_verdicts
    monkeypatch.setattr(
        "qgate.gates.judge.candidate_verdicts",
        lambda *a, **k: [*real(*a, **k), extra],
    )
    with pytest.raises(Exception, match="extra.gate is missing"):
        recompute_quality(report, profile, default_recompute())
    monkeypatch.undo()
    scen = gate_assembly.scenario_gates
    monkeypatch.setattr("qgate.gates.judge.scenario_gates", lambda *a, **k: [*scen(*a, **k), extra])
    with pytest.raises(Exception, match="extra.gate is missing"):
        recompute_perf(report, profile, default_recompute())


def test_run_perf_results_are_the_scenario_gates(report: Report) -> None:
    """The run's perf results carry `scenario_gates` of each scenario, the stored verdicts."""
    profile = Profile.model_validate(report.profile)
    perf = report.perf
    floor = floor_summary(report.quality.noise_floor, report.quality.runs)
    results = perf_results(
        profile.perf,
        perf.runs,
        resamples=perf.bootstrap_resamples,
        seed=perf.bootstrap_seed,
        floor=floor,
    )
    assert same_value(dump([r.verdicts for r in results]), dump([r.verdicts for r in perf.results]))
    for result in results:
        refs = [r for r in perf.runs if (r.scenario, r.role) == (result.scenario, "reference")]
        cands = [r for r in perf.runs if (r.scenario, r.role) == (result.scenario, "candidate")]
        got = scenario_gates(
            profile.perf,
            result.scenario,
            pooled(cands),
            refs,
            cands,
            floor,
            derivation=PERF_DERIVATION,
        )
        assert same_value(dump(got), dump(result.verdicts))
    assert any(v.gate.endswith("probes") or "probe" in v.gate for r in results for v in r.verdicts)


ASSEMBLERS = {
    "qgate/gates/judge.py": "candidate_verdicts",
    "qgate/run/candidate.py": "quality_verdicts",
    "qgate/report/verify/recompute.py": "judge",
    "qgate/report/assemble.py": "judge",
}


@pytest.mark.parametrize("path", sorted(ASSEMBLERS))
def test_no_gate_family_called_outside_the_assembly(path: str) -> None:
    """run's judge, the report's perf results and verify's recomputation call no gate family
    of their own (verify only hands its injectable functions over); they call the assembly."""
    called = called_in((ROOT / path).read_text())
    assert not called & GATE_FAMILIES, sorted(called & GATE_FAMILIES)
    assert ASSEMBLERS[path] in called


def test_a_gate_family_call_is_seen() -> None:
    source = "def f(fns):\n    return fns.evaluate_quality(1) + kv_scale_verdicts(2)\n"
    assert called_in(source) & GATE_FAMILIES == {"evaluate_quality", "kv_scale_verdicts"}
