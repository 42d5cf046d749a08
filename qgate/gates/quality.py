"""Quality gates: pure functions from the profile's policies and the raw records to verdicts.

`qgate run` and `qgate verify` call the same `evaluate_quality`, so a verdict
depends only on its arguments (no clock, no environment, no randomness).

Underpowered policies: when the paired sample cannot detect the drop that
`max_drop` forbids (the minimum detectable drop of the exact McNemar test at
the policy's alpha and power exceeds the limit), the `max_drop` and
`significance` verdicts carry `underpowered=True` and say so in the reason.
Underpowered alone does not fail a gate: the observed values still decide,
and the report shows the warning so that a reader knows a pass is weak.
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.core.verdict import Verdict
from qgate.gates.agent import structured_verdicts
from qgate.gates.effect import effect_verdicts
from qgate.gates.ladder import ladder_divergence_verdicts
from qgate.gates.looks import judged_policy, sequential_gates
from qgate.gates.noninferiority import REFINED_FROM
from qgate.gates.sampled import sampled_verdicts
from qgate.gates.sampling import sampling_verdicts
from qgate.gates.suite import all_failed, evaluate_suite, settled_gates
from qgate.profile import AccuracyPolicy, DivergenceSuite, QualitySpec
from qgate.profile.suites import exact_results
from qgate.quality.divergence import DivergenceSummary, reverse_klds, summarize_divergence
from qgate.quality.noise_floor import FloorSummary, mark_floor
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.quality.settle import stopped_at_verdict
from qgate.quality.stats import EPS, pct

__all__ = [
    "configured_suites",
    "evaluate_divergence",
    "evaluate_quality",
    "evaluate_suite",
    "harm_shown",
    "overall_passed",
    "policy_for",
    "settled_gates",
]


def configured_suites(spec: QualitySpec) -> list[tuple[str, AccuracyPolicy]]:
    """Suite ids the profile asks for, each with its accuracy policy, in a stable order."""
    return exact_results(spec)


def policy_for(spec: QualitySpec, suite: str) -> AccuracyPolicy | None:
    """The policy that judges a suite id ('math.long', 'recall.1024', 'lm_eval.gsm8k'): as
    the profile writes it, its alpha split over the looks under `stop: looks`."""
    found = next((policy for sid, policy in exact_results(spec) if sid == suite), None)
    return None if found is None else judged_policy(spec, found)


def _pick_run(runs: Sequence[SuiteRun], suite: str, role: str) -> tuple[SuiteRun | None, int]:
    found = [r for r in runs if r.suite == suite and r.role == role]
    return (found[0] if found else None), len(found)


def evaluate_divergence(spec: DivergenceSuite, run: DivergenceRun | None) -> list[Verdict]:
    """Verdicts of the configured divergence limits (none configured: no verdicts)."""
    limits: list[tuple[str, float | None]] = [
        ("max_mean_kld", spec.max_mean_kld),
        ("max_p99_kld", spec.max_p99_kld),
        ("max_max_kld", spec.max_max_kld),
        ("min_top1_agreement", spec.min_top1_agreement),
        ("max_mean_reverse_kld", spec.max_mean_reverse_kld),
    ]
    active = [(g, lim) for g, lim in limits if lim is not None]
    if run is None or not any(s.kld for s in run.sequences):
        why = "no divergence records" if run is None else "no scored positions"
        return [
            Verdict(
                gate=f"divergence.{g}",
                suite="divergence",
                observed=None,
                limit=lim,
                passed=False,
                reason=f"divergence: {why}",
            )
            for g, lim in active
        ]
    s: DivergenceSummary = summarize_divergence(run)
    head = f"divergence: {s.positions} positions in {s.sequences} sequences"
    observed = {
        "max_mean_kld": ("mean KL", s.mean_kld),
        "max_p99_kld": ("p99 KL", s.p99_kld),
        "max_max_kld": ("max KL", s.max_kld),
        "min_top1_agreement": ("top-1 agreement", s.top1_agreement),
    }
    metric = {
        "max_mean_kld": "mean_kld",
        "max_p99_kld": "p99_kld",
        "max_max_kld": "max_kld",
        "min_top1_agreement": "top1_agreement",
        "max_mean_reverse_kld": "mean_reverse_kld",
    }
    if spec.max_mean_reverse_kld is not None:
        reverse = reverse_klds(run)
        if reverse is not None:
            pooled = [k for seq in reverse for k in seq]
            observed["max_mean_reverse_kld"] = ("mean KL(cand||ref)", sum(pooled) / len(pooled))
    verdicts = []
    for gate, lim in active:
        assert lim is not None
        if gate not in observed:  # the reverse direction needs both sides' stored logprobs
            verdicts.append(
                Verdict(
                    gate=f"divergence.{gate}",
                    suite="divergence",
                    observed=None,
                    limit=lim,
                    passed=False,
                    reason=f"{head}; no stored top-k logprobs of both sides for the "
                    "reverse direction",
                    metric=metric[gate],
                    comparator="<=",
                    n=s.positions,
                )
            )
            continue
        label, value = observed[gate]
        floor = gate.startswith("min_")
        ok = value + EPS >= lim if floor else value <= lim + EPS
        if floor:
            detail = f"{label} {pct(value)} " + (">=" if ok else "<") + f" {pct(lim)} required"
        else:
            detail = f"{label} {value:.4g} " + ("<=" if ok else ">") + f" {lim:g} allowed"
        verdicts.append(
            Verdict(
                gate=f"divergence.{gate}",
                suite="divergence",
                observed=value,
                limit=lim,
                passed=ok,
                reason=f"{head}; {detail}",
                metric=metric[gate],
                comparator=">=" if floor else "<=",
                n=s.positions,
            )
        )
    return verdicts


def evaluate_quality(
    spec: QualitySpec,
    runs: Sequence[SuiteRun],
    divergence: DivergenceRun | None,
    floor: FloorSummary | None = None,
    *,
    derivation: int = REFINED_FROM,
) -> list[Verdict]:
    """Every quality verdict of a run, in a stable order (suites as configured, then divergence).

    Runs of suites the profile does not configure are ignored; a configured
    suite without both a reference and a candidate run fails each of its gates. With the
    reference's noise floor (`floor`), a suite whose policy leaves `max_flips` unset gets one
    from it, and every limit is read against it (qgate/quality/noise_floor.py). `derivation`:
    the quality derivation whose bound judges a `rule: bound` max_drop (gates/noninferiority.py).
    """
    verdicts: list[Verdict] = []
    not_run: set[str] = set()  # gates of suites with a runtime's records missing
    derived: dict[str, int] = {}
    for suite, declared in configured_suites(spec):
        policy = judged_policy(spec, declared)  # alpha split over the looks (stop: looks)
        ref, n_ref = _pick_run(runs, suite, "reference")
        cand, n_cand = _pick_run(runs, suite, "candidate")
        unset = policy.max_flips is None and not policy.fraction_items
        if floor is not None and unset and ref is not None and ref.items:
            derived[f"{suite}.max_flips"] = floor.allowance(len(ref.items))
            policy = policy.model_copy(update={"max_flips": derived[f"{suite}.max_flips"]})
        if n_ref > 1 or n_cand > 1:
            verdicts += all_failed(suite, policy, "more than one run per runtime")
        elif ref is None or cand is None:
            missing = " and ".join(
                r for r, x in (("reference", ref), ("candidate", cand)) if x is None
            )
            absent = all_failed(suite, policy, f"no {missing} run")
            not_run |= {v.gate for v in absent}
            verdicts += absent
        else:
            seq = sequential_gates(policy) if spec.stop == "looks" else frozenset()
            verdicts += evaluate_suite(suite, policy, ref, cand, seq, derivation)
    verdicts = sampling_verdicts(spec, runs, structured_verdicts(spec, runs, verdicts, derivation))
    verdicts = sampled_verdicts(spec, runs, verdicts)
    if spec.context_ladder is not None:
        ladder = ladder_divergence_verdicts(spec.context_ladder, runs)
        unrun = {v.suite for v in verdicts if v.gate in not_run}
        not_run |= {v.gate for v in ladder if v.suite in unrun}
        verdicts += ladder
    if spec.divergence is not None:
        div = evaluate_divergence(spec.divergence, divergence)
        if divergence is None:
            not_run |= {v.gate for v in div}
        verdicts += div
    verdicts += effect_verdicts(spec, runs, divergence)
    verdicts = mark_floor(verdicts, derived, floor)
    return stopped_at_verdict(spec, verdicts, not_run) if spec.stop == "verdict" else verdicts


def overall_passed(verdicts: Sequence[Verdict]) -> bool:
    """True when every verdict passed (an empty list passes: nothing was gated)."""
    return all(v.passed for v in verdicts)


def harm_shown(verdicts: Sequence[Verdict]) -> bool:
    """True when a verdict failed outright: not passed and not INCONCLUSIVE (a
    non-inferiority gate whose evidence showed neither)."""
    return any(not v.passed and not v.inconclusive for v in verdicts)
