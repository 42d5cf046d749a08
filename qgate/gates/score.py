"""The gates of a suite whose items carry a fractional score (LongBench's `score`, a ROUGE or F1
metric): a paired difference of scores, not exact matches at 1.0.

An lm-eval metric can be fractional per item (LongBench's passage retrieval scores a response
that names two paragraphs, one right, 0.5). Counting an item correct only at 1.0 gates another
accuracy than the task's own. Where any paired item's score lies strictly between 0 and 1, the
suite is judged on the per-item differences d = reference score - candidate score:

- min_accuracy: the candidate's mean score against the floor;
- max_drop: the mean difference (the task's own score drop) against the limit; under rule
  'bound' (issue 53) the one-sided (1 - alpha) bounds on it: PASS when the upper bound is
  within the limit, FAIL when the lower bound is above it, else INCONCLUSIVE. The upper bound
  is the paired t bound, and never below the bound 0/1 items give with nothing lost
  (`loss_upper(0, 0, n)`, as the quality derivation derives it): a difference of scores is at
  most the share of lowered items, and a t bound over differences that are all zero has no
  width;
- max_flips: items whose score the candidate lowered;
- significance: a one-sided paired sign-flip permutation test on d (exact up to
  `EXACT_MAX` non-zero differences, else `RESAMPLES` draws from a fixed seed, so verify
  re-derives the same p), in place of McNemar's test of the binary case.

Scores that are all 0 or 1 keep the exact-answer gates (qgate/gates/suite.py): there
the difference of scores is the difference of accuracies and McNemar's test is the exact one.
"""

from __future__ import annotations

import itertools

import numpy as np

from qgate.core.bounds import loss_upper, mean_loss_upper
from qgate.core.verdict import Comparator, Verdict
from qgate.gates.noninferiority import REFINED_FROM, bound_flags
from qgate.profile import AccuracyPolicy
from qgate.quality.records import SuiteRun
from qgate.quality.stats import pct

__all__ = [
    "EXACT_MAX",
    "RESAMPLES",
    "evaluate_scored",
    "fractional",
    "scored_bounds",
    "sign_flip_p",
]

EXACT_MAX = 16
"""Up to this many non-zero differences every sign pattern is enumerated."""
RESAMPLES = 20000
"""Random sign patterns beyond EXACT_MAX (seed 0)."""
_EPS = 1e-12


def fractional(ref: SuiteRun, cand: SuiteRun) -> bool:
    """Whether the paired runs carry scores and one lies strictly between 0 and 1."""
    return any(
        i.score is not None and _EPS < i.score < 1 - _EPS for run in (ref, cand) for i in run.items
    )


def _score(item_score: float | None, correct: bool) -> float:
    return float(correct) if item_score is None else item_score


def sign_flip_p(diffs: list[float]) -> float:
    """One-sided p of the paired sign-flip test that the mean of `diffs` is not above 0.

    Under no effect each difference is as likely negated; p is the share of sign patterns
    whose sum reaches the observed one (1.0 when every difference is 0).
    """
    d = np.array([x for x in diffs if abs(x) > _EPS], dtype=np.float64)
    if d.size == 0:
        return 1.0
    observed = float(d.sum())
    if d.size <= EXACT_MAX:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
        sums = signs @ d
        return float(np.mean(sums >= observed - 1e-9))
    rng = np.random.default_rng(0)
    hits = 0
    for start in range(0, RESAMPLES, 2000):
        size = min(2000, RESAMPLES - start)
        signs = rng.choice((1.0, -1.0), size=(size, d.size))
        hits += int(np.sum(signs @ d >= observed - 1e-9))
    return (hits + 1) / (RESAMPLES + 1)


def scored_bounds(
    reference: list[float],
    candidate: list[float],
    alpha: float,
    derivation: int = REFINED_FROM,
) -> tuple[float, float]:
    """The one-sided (1 - alpha) (lower, upper) bounds on the mean paired score loss."""
    n = len(reference)
    # no width below what n clean 0/1 items show
    floor = loss_upper(0, 0, n, 1 - alpha, **bound_flags(derivation))
    if n < 2:
        return -floor, floor
    high = max(mean_loss_upper(reference, candidate, 1 - alpha), floor)
    low = -mean_loss_upper(candidate, reference, 1 - alpha)  # the t bound on the gain, negated
    return low, high


def evaluate_scored(
    suite: str,
    policy: AccuracyPolicy,
    ref: SuiteRun,
    cand: SuiteRun,
    derivation: int = REFINED_FROM,
) -> list[Verdict]:
    """Verdicts of a fractional suite's paired runs (the items both sides answered), as quality
    `derivation` derives them."""
    cand_by_id = {i.id: i for i in cand.items}
    pairs = [
        (_score(i.score, i.correct), _score(cand_by_id[i.id].score, cand_by_id[i.id].correct))
        for i in ref.items
        if i.id in cand_by_id
    ]
    n = len(pairs)
    if n == 0:
        return []
    diffs = [r - c for r, c in pairs]
    ref_mean = sum(r for r, _ in pairs) / n
    cand_mean = sum(c for _, c in pairs) / n
    drop = sum(diffs) / n
    lowered = sum(1 for x in diffs if x > _EPS)
    raised = sum(1 for x in diffs if x < -_EPS)
    scores = (
        f"mean score candidate {pct(cand_mean)} vs reference {pct(ref_mean)} (n={n}, fractional)"
    )
    out: list[Verdict] = []

    def add(
        name: str,
        metric: str,
        comparator: Comparator,
        observed: float,
        limit: float,
        ok: bool,
        why: str,
        inconclusive: bool = False,
    ) -> None:
        out.append(
            Verdict(
                gate=f"{suite}.{name}",
                observed=observed,
                limit=limit,
                passed=ok,
                inconclusive=inconclusive,
                reason=f"{suite}: {why}",
                metric=metric,
                comparator=comparator,
                suite=suite,
                n=n,
            )
        )

    if policy.min_accuracy is not None:
        ok = cand_mean + _EPS >= policy.min_accuracy
        floor = pct(policy.min_accuracy)
        add(
            "min_accuracy",
            "mean_score",
            ">=",
            cand_mean,
            policy.min_accuracy,
            ok,
            f"{scores}; floor {floor} " + ("met" if ok else "not met"),
        )
    if policy.max_drop is not None and policy.rule == "bound":
        low, high = scored_bounds(
            [r for r, _ in pairs], [c for _, c in pairs], policy.alpha, derivation
        )
        ok, harm = high <= policy.max_drop + _EPS, low > policy.max_drop + _EPS
        level = f"{100 * (1 - policy.alpha):g}%"
        why = (
            f"loses at most {100 * high:.1f} pts ({level} upper bound) <= "
            f"{100 * policy.max_drop:.1f} allowed: shown within the margin"
            if ok
            else f"loses at least {100 * low:.1f} pts ({level} lower bound) > "
            f"{100 * policy.max_drop:.1f} allowed: harm shown"
            if harm
            else f"INCONCLUSIVE: loses at most {100 * high:.1f} pts ({level} upper bound) > "
            f"{100 * policy.max_drop:.1f} allowed, and harm is not shown (lower bound "
            f"{100 * low:.1f} pts)"
        )
        add(
            "max_drop",
            "mean_score_drop_upper_bound",
            "<=",
            high,
            policy.max_drop,
            ok,
            f"{scores}; mean paired score drop {100 * drop:.1f} pts; {why}",
            inconclusive=not ok and not harm,
        )
    elif policy.max_drop is not None:
        ok = drop <= policy.max_drop + _EPS
        add(
            "max_drop",
            "mean_score_drop",
            "<=",
            drop,
            policy.max_drop,
            ok,
            f"{scores}; mean paired score drop {100 * drop:.1f} pts "
            + ("<=" if ok else ">")
            + f" {100 * policy.max_drop:.1f} allowed",
        )
    if policy.max_flips is not None:
        ok = lowered <= policy.max_flips
        add(
            "max_flips",
            "lowered_items",
            "<=",
            float(lowered),
            float(policy.max_flips),
            ok,
            f"{lowered} items scored lower, {raised} higher of {n}; "
            + ("<=" if ok else ">")
            + f" {policy.max_flips} lowered allowed",
        )
    if policy.significance:
        p = sign_flip_p(diffs)
        ok = p >= policy.alpha
        add(
            "significance",
            "sign_flip_p",
            ">=",
            p,
            policy.alpha,
            ok,
            f"paired sign-flip test on {lowered + raised} changed scores (mean drop "
            f"{100 * drop:.1f} pts), p={p:.3g} "
            + (">=" if ok else "<")
            + f" alpha {policy.alpha:g}"
            + ("" if ok else " (candidate significantly worse)"),
        )
    return out
