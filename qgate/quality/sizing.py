"""Sample sizes from a stated detection: how many items a gate needs to catch a drop.

A gate whose sample cannot detect the drop it forbids passes broken candidates
by construction. A policy may state `detect: {drop, power}`: the exact-answer
suites are then sized so that the one-sided exact McNemar test at the policy's
alpha detects that drop with that power, under the paired model of
`stats.mcnemar_power` (each item flips with probability `discordance`, losses
outnumbering gains by the drop). The math and recall sets are generated, so
they grow to the count; an lm-eval task's `limit` becomes it.

Everything here is a pure function of the profile, so `run`, `plan` and
`verify` size the same sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from qgate.core.plan import GatePower
from qgate.profile import AccuracyPolicy, Detect, LmEvalTask, MathSuite, RecallSuite
from qgate.quality.stats import mcnemar_power

__all__ = [
    "DISCORDANCE_PRIOR",
    "Sizing",
    "achieved_power",
    "gate_power",
    "items_needed",
    "lmeval_limit",
    "math_limit",
    "recall_haystacks",
]

DISCORDANCE_PRIOR = 2.0
"""Without a stated discordance, items flip at twice the drop: three lost for each gained."""


@dataclass(frozen=True)
class Sizing:
    """The item count a stated detection asks for, and what the bound left of it."""

    needed: int | None  # None: max_items cannot reach the power
    used: int
    discordance: float
    source: str  # where the discordance came from, for people
    power_at_used: float

    @property
    def capped(self) -> bool:
        return self.needed is None or self.needed > self.used


def _discordance(detect: Detect) -> tuple[float, str]:
    if detect.discordance is not None:
        return max(detect.discordance, detect.drop), "stated"
    return min(1.0, DISCORDANCE_PRIOR * detect.drop), "prior: twice the drop"


def achieved_power(n: int, drop: float, discordance: float, alpha: float) -> float:
    """Power at n items to detect `drop` when items flip at `discordance` (at least the drop)."""
    return mcnemar_power(n, drop, min(1.0, max(discordance, drop)), alpha)


def items_needed(detect: Detect, alpha: float) -> Sizing:
    """Items for the stated detection, bounded by `detect.max_items`.

    The exact test's power is not monotone in n (a sawtooth: the critical count
    steps); the answer is found by doubling and then halving on the power, and
    it always has at least the stated power (it can exceed the smallest such n
    by a few items, where a tooth dips).
    """
    disc, source = _discordance(detect)

    def enough(n: int) -> bool:
        return achieved_power(n, detect.drop, disc, alpha) >= detect.power

    bound = detect.max_items
    hi = 1
    while hi < bound and not enough(hi):
        hi *= 2
    hi = min(hi, bound)
    if not enough(hi):
        return Sizing(None, bound, disc, source, achieved_power(bound, detect.drop, disc, alpha))
    lo = hi // 2  # not enough (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return Sizing(hi, hi, disc, source, achieved_power(hi, detect.drop, disc, alpha))


def _sized(policy: AccuracyPolicy) -> int | None:
    return None if policy.detect is None else items_needed(policy.detect, policy.alpha).used


def math_limit(spec: MathSuite) -> int | None:
    """Math items per form: the detection's count when stated, else `limit` (None: the set)."""
    sized = _sized(spec)
    return spec.limit if sized is None else sized


def recall_haystacks(spec: RecallSuite) -> int:
    """Haystacks per length: enough for the detection's count over the depths, else as given."""
    sized = _sized(spec)
    return spec.haystacks if sized is None else math.ceil(sized / len(spec.depths))


def lmeval_limit(task: LmEvalTask) -> int | None:
    """Documents of an lm-eval task: the detection's count when stated, else `limit`."""
    sized = _sized(task)
    return task.limit if sized is None else sized


def _mdd_prior(n: int, alpha: float, power: float, detect: Detect | None) -> float | None:
    """Smallest drop detected at n when items flip as the detection (or the prior) assumes."""

    def disc(d: float) -> float:
        if detect is not None and detect.discordance is not None:
            return detect.discordance
        return DISCORDANCE_PRIOR * d

    if achieved_power(n, 1.0, 1.0, alpha) < power:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(30):  # ~1e-9: far below the 0.1 point a plan prints
        mid = (lo + hi) / 2
        if achieved_power(n, mid, disc(mid), alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def gate_power(suite: str, policy: AccuracyPolicy, items: int) -> GatePower:
    """What `items` paired items detect under `policy`, and what its target drop needs."""
    detect = policy.detect
    power = detect.power if detect else policy.power
    # a max_drop of 0 forbids any drop: no size detects "any", so it has no target here
    target = detect.drop if detect else (policy.max_drop or None)
    needed: int | None = None
    if target is not None:
        ask = detect or Detect(drop=target, power=power)
        needed = items_needed(ask, policy.alpha).needed
    assumed = (
        f"{100 * detect.discordance:.0f}% of items flip (stated)"
        if detect and detect.discordance is not None
        else "items flip at twice the drop (prior)"
    )
    return GatePower(
        suite=suite,
        items=items,
        alpha=policy.alpha,
        power=power,
        discordance=assumed,
        min_detectable_drop=_mdd_prior(items, policy.alpha, power, detect),
        target_drop=target,
        items_needed=needed,
        sized=detect is not None,
    )
