"""The gates of one exact-answer suite: the 2x2 table of paired outcomes against a policy.

`evaluate_suite` is what qgate/gates/quality.py calls per suite; it lives apart
from the divergence gates and the run-level rules that gather them. A suite
that stopped early (quality.stop) is judged on its planned items: each gate
passes or fails only where every outcome of the items it did not run agrees
(qgate/quality/settle.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from qgate.core.verdict import Comparator, Verdict
from qgate.gates.noninferiority import (
    REFINED_FROM,
    Outcome,
    bound_outcome,
    bound_reason,
    drop_bounds,
)
from qgate.gates.pairing import pairing_problem
from qgate.gates.score import evaluate_scored, fractional
from qgate.profile import AccuracyPolicy
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.settle import bounds
from qgate.quality.sizing import achieved_power
from qgate.quality.stats import (
    EPS,
    FlipCounts,
    count_flips,
    mcnemar_p,
    mcnemar_rejects,
    min_detectable_drop,
    pct,
    wilson,
)

__all__ = [
    "ACCURACY_GATES",
    "AccuracyGate",
    "Outcome",
    "all_failed",
    "evaluate_suite",
    "gates_of",
    "settled_gates",
]


@dataclass(frozen=True)
class _Texts:
    """What the reasons of one suite's verdicts say, worked out once."""

    suite: str
    flips: FlipCounts
    acc_text: str
    mdd_text: str
    warn: str
    power_text: str
    underpowered: bool
    derivation: int


def _min_accuracy_reason(policy: AccuracyPolicy, t: _Texts, ok: bool) -> str:
    floor = pct(policy.min_accuracy or 0.0)
    return f"{t.suite}: {t.acc_text}; floor {floor} " + ("met" if ok else "not met")


def _max_drop_reason(policy: AccuracyPolicy, t: _Texts, ok: bool) -> str:
    if policy.rule == "bound":
        return bound_reason(policy, t.suite, t.flips, t.derivation)
    drop = (t.flips.lost - t.flips.gained) / t.flips.n
    return (
        f"{t.suite}: {t.acc_text}; drop {100 * drop:.1f} pts "
        + ("<=" if ok else ">")
        + f" {100 * (policy.max_drop or 0.0):.1f} allowed{t.warn}{t.power_text}"
    )


def _max_flips_reason(policy: AccuracyPolicy, t: _Texts, ok: bool) -> str:
    f = t.flips
    return (
        f"{t.suite}: {f.lost} lost, {f.gained} gained of {f.n}; "
        + ("<=" if ok else ">")
        + f" {policy.max_flips} lost allowed"
    )


def _significance_reason(policy: AccuracyPolicy, t: _Texts, ok: bool) -> str:
    f = t.flips
    return (
        f"{t.suite}: exact McNemar {f.lost} lost vs {f.gained} gained, "
        f"p={mcnemar_p(f.lost, f.gained):.3g} "
        + (">=" if ok else "<")
        + f" alpha {policy.alpha:g}"
        + ("" if ok else " (candidate significantly worse)")
        + f"; {t.mdd_text}"
        + (" (UNDERPOWERED for max_drop)" if t.underpowered else "")
        + t.power_text
    )


@dataclass(frozen=True)
class AccuracyGate:
    """One gate of an exact-answer suite: when the policy asks for it, and its rule."""

    name: str
    metric: str
    comparator: Comparator
    limit: Callable[[AccuracyPolicy], float | None]
    """The gate's limit; None: the policy does not ask for this gate."""
    observed: Callable[[FlipCounts], float]
    passes: Callable[[AccuracyPolicy, FlipCounts], bool]
    """The gate's point rule on a full 2x2 table: passed, else failed."""
    reason: Callable[[AccuracyPolicy, _Texts, bool], str]
    powered: bool
    """The verdict carries the sample's power fields."""


def outcome(
    gate: AccuracyGate, policy: AccuracyPolicy, f: FlipCounts, derivation: int = REFINED_FROM
) -> Outcome:
    """The gate's verdict on a full 2x2 table (run, verify and settle all use this one):
    max_drop under rule 'bound' by its bounds (as quality `derivation` derives them), every
    other gate by its point rule."""
    if gate.name == "max_drop" and policy.rule == "bound":
        return bound_outcome(policy, f, derivation)
    return "pass" if gate.passes(policy, f) else "fail"


def observed(
    gate: AccuracyGate, policy: AccuracyPolicy, f: FlipCounts, derivation: int = REFINED_FROM
) -> float:
    """What the gate compares with its limit: under rule 'bound', max_drop's upper bound."""
    if gate.name == "max_drop" and policy.rule == "bound":
        return drop_bounds(policy, f, derivation)[1]
    return gate.observed(f)


def _accuracy(f: FlipCounts) -> float:
    return (f.both_correct + f.gained) / f.n


def _drop(f: FlipCounts) -> float:
    return (f.lost - f.gained) / f.n


ACCURACY_GATES: tuple[AccuracyGate, ...] = (
    AccuracyGate(
        "min_accuracy",
        "accuracy",
        ">=",
        lambda policy: policy.min_accuracy,
        _accuracy,
        lambda policy, f: _accuracy(f) + EPS >= (policy.min_accuracy or 0.0),
        _min_accuracy_reason,
        powered=False,
    ),
    AccuracyGate(
        "max_drop",
        "accuracy_drop",
        "<=",
        lambda policy: policy.max_drop,
        _drop,
        lambda policy, f: _drop(f) <= (policy.max_drop or 0.0) + EPS,
        _max_drop_reason,
        powered=True,
    ),
    AccuracyGate(
        "max_flips",
        "lost_items",
        "<=",
        lambda policy: None if policy.max_flips is None else float(policy.max_flips),
        lambda f: float(f.lost),
        lambda policy, f: f.lost <= (policy.max_flips or 0),
        _max_flips_reason,
        powered=False,
    ),
    AccuracyGate(
        "significance",
        "mcnemar_p",
        ">=",
        lambda policy: policy.alpha if policy.significance else None,
        lambda f: mcnemar_p(f.lost, f.gained),
        lambda policy, f: not mcnemar_rejects(f.lost, f.gained, policy.alpha),
        _significance_reason,
        powered=True,
    ),
)
"""The four accuracy gates, in verdict order: the one list of them."""


def gates_of(policy: AccuracyPolicy) -> list[AccuracyGate]:
    """The accuracy gates `policy` asks for, in verdict order."""
    return [g for g in ACCURACY_GATES if g.limit(policy) is not None]


def all_failed(suite: str, policy: AccuracyPolicy, reason: str) -> list[Verdict]:
    gates = [(g.name, g.limit(policy)) for g in gates_of(policy)] or [("records", None)]
    return [
        Verdict(
            gate=f"{suite}.{name}",
            suite=suite,
            observed=None,
            limit=limit,
            passed=False,
            reason=f"{suite}: {reason}",
        )
        for name, limit in gates
    ]


def _outcomes(
    policy: AccuracyPolicy, f: FlipCounts, derivation: int = REFINED_FROM
) -> dict[str, Outcome]:
    """Each gate's verdict on a full 2x2 table."""
    return {g.name: outcome(g, policy, f, derivation) for g in gates_of(policy)}


def _power_fields(
    policy: AccuracyPolicy, flips: FlipCounts
) -> tuple[float | None, float | None, bool, str]:
    """(power, min detectable drop, underpowered, reason tail) of a suite's sample."""
    n = flips.n
    target = policy.detect.power if policy.detect else policy.power
    mdd = min_detectable_drop(n, policy.alpha, target, flips.discordant / n)
    drop = policy.detect.drop if policy.detect else policy.max_drop
    power = None if drop is None else achieved_power(n, drop, flips.discordant / n, policy.alpha)
    underpowered = policy.max_drop is not None and (mdd is None or mdd > policy.max_drop + EPS)
    tail = ""
    if policy.detect is not None and power is not None:
        underpowered = underpowered or power < policy.detect.power
        tail = (
            f"; power {power:.2f} to detect a {100 * policy.detect.drop:.1f}-pt drop "
            f"(stated {policy.detect.power:g})"
        )
    return power, mdd, underpowered, tail


def evaluate_suite(
    suite: str,
    policy: AccuracyPolicy,
    ref: SuiteRun,
    cand: SuiteRun,
    at_look: frozenset[str] = frozenset(),
    derivation: int = REFINED_FROM,
) -> list[Verdict]:
    """Verdicts of one suite's paired runs, as quality `derivation` derives them; a pairing
    problem fails every gate of the suite.

    Gates compare the items the two runs share; a pairing problem (missing,
    extra or duplicate items) adds a failed `<suite>.pairing` verdict. A run that
    stopped early is judged on its planned items: a gate passes or fails only
    when every outcome of the items it did not run gives that verdict
    (qgate/quality/settle.py); otherwise it is not settled, and not passed. The gates named
    in `at_look` (`stop: looks`, qgate/gates/looks.py) are judged on the items run instead.
    """
    verdicts: list[Verdict] = []
    problem = pairing_problem(ref, cand)
    if problem is not None:
        verdicts.append(
            Verdict(
                gate=f"{suite}.pairing",
                suite=suite,
                observed=None,
                limit=None,
                passed=False,
                reason=f"{suite}: {problem}",
            )
        )
    if fractional(ref, cand):
        return verdicts + (
            evaluate_scored(suite, policy, ref, cand, derivation)
            or all_failed(suite, policy, "no paired items to compare")
        )
    cand_by_id = {i.id: i for i in cand.items}
    pairs = [(i.correct, cand_by_id[i.id].correct) for i in ref.items if i.id in cand_by_id]
    n = len(pairs)
    planned = ref.planned or cand.planned
    if n == 0 and planned is not None and (ref.partial or cand.partial):
        return verdicts + _settle(
            all_failed(suite, policy, "no paired items yet"),
            policy,
            ref,
            cand,
            planned,
            derivation=derivation,
        )
    if n == 0:
        return verdicts + all_failed(suite, policy, "no paired items to compare")
    flips = count_flips(pairs)
    ref_k = flips.both_correct + flips.lost
    cand_k = flips.both_correct + flips.gained
    ref_acc, cand_acc = ref_k / n, cand_k / n
    low, high = wilson(cand_k, n)
    acc_text = (
        f"candidate {pct(cand_acc)} [{100 * low:.1f}, {100 * high:.1f}] "
        f"vs reference {pct(ref_acc)} (n={n})"
    )
    power, mdd, underpowered, power_text = _power_fields(policy, flips)
    at = f"at alpha {policy.alpha:g}, power {policy.power:g}"
    mdd_text = (
        f"n={n} cannot detect any drop {at}"
        if mdd is None
        else f"detectable drop {100 * mdd:.1f} pts {at}"
    )
    warn = (
        f"; UNDERPOWERED: {mdd_text} > {100 * (policy.max_drop or 0):.1f} pts allowed"
        if underpowered and policy.max_drop is not None and (mdd is None or mdd > policy.max_drop)
        else ""
    )
    texts = _Texts(suite, flips, acc_text, mdd_text, warn, power_text, underpowered, derivation)
    power_of = {"power": power, "min_detectable_drop": mdd, "underpowered": underpowered}
    for gate in gates_of(policy):
        result = outcome(gate, policy, flips, derivation)
        bound = gate.name == "max_drop" and policy.rule == "bound"
        verdicts.append(
            Verdict(
                gate=f"{suite}.{gate.name}",
                observed=observed(gate, policy, flips, derivation),
                limit=gate.limit(policy),
                passed=result == "pass",
                inconclusive=result == "inconclusive",
                reason=gate.reason(policy, texts, result == "pass"),
                metric="accuracy_drop_upper_bound" if bound else gate.metric,
                comparator=gate.comparator,
                suite=suite,
                n=n,
                **(power_of if gate.powered else {}),
            )
        )
    if planned is not None and (ref.partial or cand.partial):
        verdicts = _settle(verdicts, policy, ref, cand, planned, at_look, derivation)
    return verdicts


def settled_gates(
    policy: AccuracyPolicy,
    ref: Sequence[ItemRecord],
    cand: Sequence[ItemRecord],
    planned: int,
    derivation: int = REFINED_FROM,
) -> dict[str, Outcome | None]:
    """Each gate's verdict over `planned` items where the records so far decide it, else None
    (as quality `derivation` derives them).

    Every gate's outcome is monotone in the candidate's favour (a non-inferiority bound
    included: fewer lost, more gained never raises it), so the worst and best completions
    agreeing settle it."""
    c = bounds(ref, cand, planned)
    worst = _outcomes(policy, c.worst, derivation)
    best = _outcomes(policy, c.best, derivation)
    return {gate: got if got == best[gate] else None for gate, got in worst.items()}


def _settle(
    verdicts: list[Verdict],
    policy: AccuracyPolicy,
    ref: SuiteRun,
    cand: SuiteRun,
    planned: int,
    at_look: frozenset[str] = frozenset(),
    derivation: int = REFINED_FROM,
) -> list[Verdict]:
    """A stopped suite's verdicts: each gate as its planned items decide it, or not settled
    (those in `at_look` as the items run decide them)."""
    decided = settled_gates(policy, ref.items, cand.items, planned, derivation)
    known = len({i.id for i in ref.items} & {i.id for i in cand.items})
    out = []
    for v in verdicts:
        gate = v.gate.rsplit(".", 1)[1]
        got = decided.get(gate)
        if gate not in decided or gate in at_look:
            out.append(v)
        elif got is not None:
            tail = (
                f"; settled at {known} of {planned} items: every outcome of the other "
                f"{planned - known} gives this verdict"
            )
            update = {
                "passed": got == "pass",
                "inconclusive": got == "inconclusive",
                "reason": v.reason + tail,
            }
            out.append(v.model_copy(update=update))
        else:
            tail = f"; NOT SETTLED: stopped at {known} of {planned} items"
            update = {
                "passed": False,
                "inconclusive": False,
                "settled": False,
                "reason": v.reason + tail,
            }
            out.append(v.model_copy(update=update))
    return out
