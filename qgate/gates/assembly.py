"""The verdict assembly: every gate family a candidate and a perf scenario are judged by, in
report order, written once.

`qgate run` (run/candidate.py `judge`, report/assemble.py `perf_results`) and `qgate verify`
(report/verify/recompute.py) both call these two functions, the run with the current
derivations and the records it just made, verify with the report's stored derivations and
records; a gate family added here is made by the one and recomputed by the other. Pure
functions: records in, verdicts out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from qgate.core.serving import EffectiveConfig
from qgate.core.verdict import Verdict
from qgate.gates.agent import SERVED_FROM, served_verdicts
from qgate.gates.changes_applied import CONTRADICTED_FROM, contradicted_verdicts
from qgate.gates.cross_check import CROSS_CHECK_FROM, cross_check_verdicts
from qgate.gates.probes import probe_verdicts
from qgate.gates.quality import evaluate_quality
from qgate.gates.reuse import evaluate_reuse
from qgate.gates.scales import kv_scale_verdicts
from qgate.gates.scenario import scenario_verdicts
from qgate.gates.speculative import evaluate_speculative
from qgate.gates.turns import graded_spec, turn_verdicts
from qgate.perf.records import ScenarioRun
from qgate.profile import PerfSpec, Profile
from qgate.quality.noise_floor import FloorRecords, FloorSummary, floor_summary
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.reuse_records import PassRun
from qgate.quality.spec_counters import SpecSnapshot

__all__ = [
    "GRADED_TURNS_FROM",
    "PROBES_FROM",
    "candidate_verdicts",
    "scenario_gates",
]

# evaluate_quality(spec, runs, divergence[, floor]): the floor only where one was measured
EvaluateQuality = Callable[..., list[Verdict]]
# scenario_verdicts(profile.perf, candidate_run): the candidate's stream checks
ScenarioChecks = Callable[[PerfSpec, ScenarioRun], list[Verdict]]

PROBES_FROM = 8
"""The perf derivation from which a scenario's graded probes are gated."""
GRADED_TURNS_FROM = 9
"""The perf derivation from which a multi-turn scenario's graded turns are gated."""


def candidate_verdicts(
    profile: Profile,
    runs: Sequence[SuiteRun],
    divergence: DivergenceRun | None,
    passes: Sequence[PassRun],
    configs: Sequence[EffectiveConfig],
    speculative: Sequence[SpecSnapshot],
    noise_floor: FloorRecords | None,
    *,
    derivation: int,
    evaluate: EvaluateQuality = evaluate_quality,
) -> list[Verdict]:
    """A candidate's quality verdicts, in report order: the suites' and divergence gates (with
    the reference's noise floor where one was measured; from quality derivation 8 each agent
    result's `served` gate after its own, from 5 the cross-check of a speculating candidate's
    scores after them), the reuse passes, the
    KV-cache scales, the contradicted changes (quality derivation 4 on) and the speculative
    acceptance. A bound's max_drop is judged by the bound of `derivation`
    (gates/noninferiority.py: the corrected one from 6).

    `runs`, `passes`, `configs` and `speculative` hold both sides' records, reference first;
    `derivation` is the quality derivation the verdicts are made by (the run's: the current
    one; verify's: the report's).
    """
    floor = floor_summary(noise_floor, runs)
    extra = (floor,) if floor is not None else ()  # no floor: the verdicts of before
    out = list(evaluate(profile.quality, runs, divergence, *extra, derivation=derivation))
    if derivation >= SERVED_FROM:
        out = served_verdicts(profile.quality, runs, out)
    if derivation >= CROSS_CHECK_FROM:
        out = cross_check_verdicts(profile, divergence, out)
    out += evaluate_reuse(profile.quality, runs, passes, derivation)
    out += kv_scale_verdicts(profile.engine.uncalibrated_kv_scales, configs)
    if derivation >= CONTRADICTED_FROM:
        out += contradicted_verdicts(profile, configs, passes, speculative)
    out += evaluate_speculative(profile, speculative)
    return out


def scenario_gates(
    spec: PerfSpec | None,
    name: str,
    candidate: ScenarioRun | None,
    refs: Sequence[ScenarioRun],
    cands: Sequence[ScenarioRun],
    floor: FloorSummary | None,
    *,
    derivation: int,
    checks: ScenarioChecks = scenario_verdicts,
) -> list[Verdict]:
    """A perf scenario's verdicts, in report order: the candidate's stream checks (over its
    pooled run `candidate`), the graded probes (perf derivation 8 on) and the graded session
    turns (9 on) over both sides' blocks and rounds (`refs`, `cands`)."""
    out = list(checks(spec, candidate)) if candidate is not None and spec is not None else []
    if derivation >= PROBES_FROM:  # the gate re-grades every probe's text
        out += probe_verdicts(spec.probes if spec else None, name, refs, cands, floor)
    if derivation >= GRADED_TURNS_FROM:
        out += turn_verdicts(graded_spec(spec, name), name, refs, cands)
    return out
