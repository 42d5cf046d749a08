"""Non-inferiority on a paired 0/1 suite (issue 53, a PASS that shows something): the
max_drop gate under `rule: bound` PASSes only when the one-sided (1 - alpha) upper bound on
the candidate's loss is within the margin, FAILs when the lower bound is above it (harm
shown), and is INCONCLUSIVE otherwise. The bounds are qgate/core/bounds.py's: exact up to 40
items (from quality derivation `REFINED_FROM`, 7, its supremum over the nuisance refined past
the grid, qgate/core/exact_bound.py); above, from derivation `CORRECTED_FROM` the score bound
corrected to keep its level (qgate/core/corrected_score.py), before it Tango's plain score
bound, whose false PASS at the margin slipped above alpha. The lower bound is the mirrored
upper one from derivation 7; before, Tango's plain one, whose false FAIL at the margin
reached 1.6 alpha. With nothing flipped they still have width (8 clean items bound the loss
at 31 points, 81 at 3.8), where a point estimate or a paired Wald interval has none. Run,
settle and verify all judge through `bound_outcome`.
"""

from __future__ import annotations

from typing import Literal

from qgate.core.bound_derivation import CORRECTED_FROM, REFINED_FROM, bound_flags
from qgate.core.bounds import clean_items_to_show, loss_lower, loss_upper, score_lower
from qgate.profile import AccuracyPolicy
from qgate.quality.stats import EPS, FlipCounts

__all__ = [
    "CORRECTED_FROM",
    "REFINED_FROM",
    "Outcome",
    "bound_flags",
    "bound_outcome",
    "bound_reason",
    "drop_bounds",
]

Outcome = Literal["pass", "fail", "inconclusive"]
"""A gate's verdict on a full 2x2 table: shown within its limit, shown past it, or neither
(only a non-inferiority gate, rule 'bound', can be neither)."""


def drop_bounds(
    policy: AccuracyPolicy, f: FlipCounts, derivation: int = REFINED_FROM
) -> tuple[float, float]:
    """The one-sided (1 - alpha) (lower, upper) bounds on the candidate's paired loss, as
    quality `derivation` derives them (qgate/core/bounds.py)."""
    confidence = 1 - policy.alpha
    low = (
        loss_lower(f.lost, f.gained, f.n, confidence)
        if derivation >= REFINED_FROM
        else score_lower(f.lost, f.gained, f.n, confidence)
    )
    return low, loss_upper(f.lost, f.gained, f.n, confidence, **bound_flags(derivation))


def bound_outcome(policy: AccuracyPolicy, f: FlipCounts, derivation: int = REFINED_FROM) -> Outcome:
    """PASS when the upper bound is within max_drop, FAIL when the lower bound is above it."""
    low, high = drop_bounds(policy, f, derivation)
    margin = policy.max_drop or 0.0
    if high <= margin + EPS:
        return "pass"
    return "fail" if low > margin + EPS else "inconclusive"


def bound_reason(
    policy: AccuracyPolicy, suite: str, f: FlipCounts, derivation: int = REFINED_FROM
) -> str:
    """The verdict line: what the bound shows, or why it shows neither."""
    low, high = drop_bounds(policy, f, derivation)
    margin = policy.max_drop or 0.0
    level = f"{100 * (1 - policy.alpha):g}%"
    seen = f"drop {100 * (f.lost - f.gained) / f.n:.1f} pts, {f.lost} lost, {f.gained} gained"
    outcome = bound_outcome(policy, f, derivation)
    if outcome == "pass":
        return (
            f"{suite}: loses at most {100 * high:.1f} pts ({level} upper bound; {seen} of "
            f"{f.n}) <= {100 * margin:.1f} allowed: shown within the margin"
        )
    if outcome == "fail":
        return (
            f"{suite}: loses at least {100 * low:.1f} pts ({level} lower bound; {seen} of "
            f"{f.n}) > {100 * margin:.1f} allowed: harm shown"
        )
    need = (
        f"a clean candidate needs at least "
        f"{clean_items_to_show(margin, 1 - policy.alpha, **bound_flags(derivation))} "
        "items to show this margin"
        if 0 < margin < 1
        else "no count of items shows a zero margin"
    )
    return (
        f"{suite}: INCONCLUSIVE: loses at most {100 * high:.1f} pts ({level} upper bound; "
        f"{seen} of {f.n}) > {100 * margin:.1f} allowed, and harm is not shown (lower bound "
        f"{100 * low:.1f} pts); {need}"
    )
