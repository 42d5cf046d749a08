"""Sample sizes from a stated detection: how many items a gate needs to catch a drop.

A gate whose sample cannot detect the drop it forbids passes broken candidates
by construction. A policy may state `detect: {drop, power}`: the exact-answer
suites are then sized so that the one-sided exact McNemar test at the policy's
alpha detects that drop with that power, under the paired model of
`stats.mcnemar_power` (each item flips with probability `discordance`, losses
outnumbering gains by the drop). The math and recall sets are generated, so
they grow to the count; an lm-eval task's `limit` becomes it.

Everything here is a pure function of the profile, so `run`, `plan` and
`verify` size the same sets. A math suite calibrated on a prior run's records
(qgate/quality/calibrate.py) is sized at the discordance OBSERVED there, over
the levels it draws from, instead of the prior.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from qgate.core.bound_derivation import REFINED_FROM, bound_flags
from qgate.core.bounds import items_to_show, show_power
from qgate.core.plan import GatePower
from qgate.profile import (
    AccuracyPolicy,
    ContextLadder,
    Detect,
    LmEvalTask,
    MathSuite,
    RecallSuite,
    StructuredSuite,
    ToolCallsSuite,
)
from qgate.profile.context_ladder import buckets
from qgate.profile.quality import detect_problem, fewest_rejecting
from qgate.quality.calibrate import math_calibration
from qgate.quality.stats import mcnemar_power, smallest_n

__all__ = [
    "DISCORDANCE_PRIOR",
    "Sizing",
    "achieved_power",
    "gate_power",
    "items_needed",
    "ladder_items",
    "ladder_plan",
    "lmeval_limit",
    "math_limit",
    "observed_discordance",
    "recall_cells",
    "recall_haystacks",
    "agent_items",
    "show_discordance",
    "show_items",
    "sized_as",
]

_JUDGED_BY: ContextVar[int] = ContextVar("qgate_sizing_derivation", default=REFINED_FROM)
"""The quality derivation whose bound `show` sizes by where none is passed: the newest (what
a run applies), or, within `sized_as`, the one a report was signed with."""


@contextmanager
def sized_as(derivation: int) -> Iterator[None]:
    """Within: size `show` by quality `derivation`'s bound, as the qgate that signed a report
    sized its suites (`qgate verify` re-derives their item counts so)."""
    token = _JUDGED_BY.set(derivation)
    try:
        yield
    finally:
        _JUDGED_BY.reset(token)


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


Observed = tuple[float, str]
"""A discordance measured on a prior run's records, and where it comes from."""


def observed_discordance(policy: AccuracyPolicy) -> Observed | None:
    """The discordance a calibrated math suite observed over its levels (None: none known)."""
    if not isinstance(policy, MathSuite):
        return None
    result = math_calibration(policy)
    if result is None or result.discordance is None:
        return None
    paired = sum(s.paired for s in result.levels if s.drawn)
    return result.discordance, f"observed on {paired} calibration items of levels {result.chosen}"


def _discordance(detect: Detect, observed: Observed | None = None) -> tuple[float, str]:
    if observed is not None:
        return max(observed[0], detect.drop), observed[1]
    if detect.discordance is not None:
        return detect.discordance, "stated"
    return min(1.0, DISCORDANCE_PRIOR * detect.drop), "prior: twice the drop"


def achieved_power(n: int, drop: float, discordance: float, alpha: float) -> float:
    """Power at n items to detect `drop` when items flip at `discordance`.

    `discordance` may be an observed share below the drop (few flips seen): the
    drop then needs at least that many flips, and the power assumes it.
    """
    return mcnemar_power(n, drop, min(1.0, max(discordance, drop)), alpha)


def items_needed(detect: Detect, alpha: float, observed: Observed | None = None) -> Sizing:
    """The fewest items, at most `detect.max_items`, whose exact test reaches the stated power.

    The exact test's power is a sawtooth in n, so this is the smallest such n
    (`stats.smallest_n`), not the first one a bisection lands on. ValueError
    for a detection outside the model (`profile.quality.detect_problem`;
    `qgate validate` refuses such profiles for the same reasons). `observed`:
    the discordance measured on a prior run's records (calibration), used
    instead of the stated one or the prior.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha {alpha!r} is not a test level: it must lie between 0 and 1")
    problem = detect_problem(detect, alpha)
    if problem is not None:
        raise ValueError(f"detect.{problem[0]} {problem[1]}")
    disc, source = _discordance(detect, observed)
    bound = detect.max_items
    needed = smallest_n(detect.power, detect.drop, disc, alpha, bound)
    used = bound if needed is None else needed
    return Sizing(needed, used, disc, source, achieved_power(used, detect.drop, disc, alpha))


def _sized(policy: AccuracyPolicy, derivation: int | None = None) -> int | None:
    """The items `detect` and `show` ask for, the larger (None: neither is set); `show` as
    quality `derivation`'s bound judges."""
    counts = []
    if policy.detect is not None:
        counts.append(items_needed(policy.detect, policy.alpha, observed_discordance(policy)).used)
    if (shown := show_items(policy, derivation)) is not None:
        counts.append(shown)
    return max(counts) if counts else None


def show_discordance(policy: AccuracyPolicy, observed: Observed | None = None) -> float:
    """The flip rate of a candidate with no true loss: `show.discordance`, else the measured
    one, else the detection's stated one, else twice max_drop (generous to churn, so the
    count errs high)."""
    if policy.show is not None and policy.show.discordance is not None:
        return policy.show.discordance
    if observed is not None:
        return observed[0]
    if policy.detect is not None and policy.detect.discordance is not None:
        return policy.detect.discordance
    return min(1.0, DISCORDANCE_PRIOR * (policy.max_drop or 0.0))


def show_items(policy: AccuracyPolicy, derivation: int | None = None) -> int | None:
    """The items `show` asks for: the fewest at which a candidate with no true loss PASSes its
    bound with `show.power`, at most `show.max_items` (None: no `show`, or nothing to size).
    The bound is the one quality `derivation` judges by (gates/noninferiority.py); unless
    told, the newest, which a run applies (within `sized_as`, the one it names)."""
    show, margin = policy.show, _margin_to_show(policy)
    if show is None or margin is None:
        return None
    disc = max(show_discordance(policy, observed_discordance(policy)), 1e-6)
    judged_by = _JUDGED_BY.get() if derivation is None else derivation
    n = items_to_show(
        margin, disc, 1 - policy.alpha, show.power, show.max_items, **bound_flags(judged_by)
    )
    return show.max_items if n is None else n


def _margin_to_show(policy: AccuracyPolicy) -> float | None:
    """The margin a bound-judged gate must show (None: the point rule, no margin in (0, 1), or
    an alpha below float resolution, where there is no bound to show)."""
    margin = policy.max_drop
    if policy.rule != "bound" or margin is None or not 0 < margin < 1:
        return None
    return margin if 1 - policy.alpha < 1 else None


def math_limit(spec: MathSuite) -> int | None:
    """Math items per form: the detection's count when stated, else `limit` (None: the set)."""
    sized = _sized(spec)
    return spec.limit if sized is None else sized


def recall_haystacks(spec: RecallSuite) -> int:
    """Haystacks per length: enough for the detection's count over the depths, else as given."""
    sized = _sized(spec)
    return spec.haystacks if sized is None else math.ceil(sized / recall_cells(spec))


def recall_cells(spec: RecallSuite) -> int:
    """Items per haystack index at one length: one per depth and similar-code level."""
    return len(spec.depths) * len(spec.similar)


def agent_items(spec: ToolCallsSuite | StructuredSuite) -> int:
    """Generated tool-call or structured items per result: the detection's count when stated,
    else `items`."""
    sized = _sized(spec)
    return spec.items if sized is None else sized


def ladder_items(spec: ContextLadder) -> int:
    """Items per ladder bucket: the detection's count when stated, else `per_bucket`."""
    sized = _sized(spec)
    return spec.per_bucket if sized is None else sized


def ladder_plan(spec: ContextLadder) -> list[tuple[str, int | None, str]]:
    """(result id, items per side, what an item is) per ladder bucket, for `qgate plan`."""
    n = ladder_items(spec)
    return [
        (b.suite, n, f"recall haystacks of {b.label()} tokens (centred on {b.centre})")
        for b in buckets(spec.start, spec.up_to)
    ]


def lmeval_limit(task: LmEvalTask) -> int | None:
    """Documents of an lm-eval task: the detection's count when stated, else `limit`."""
    sized = _sized(task)
    return task.limit if sized is None else sized


def _mdd_prior(
    n: int, alpha: float, power: float, detect: Detect | None, observed: Observed | None = None
) -> float | None:
    """Smallest drop detected at n when items flip as observed, stated, or the prior assumes."""

    def disc(d: float) -> float:
        if observed is not None:
            return observed[0]
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
    observed = observed_discordance(policy)
    needed: int | None = None
    if target is not None:
        # the default bound, or the fewest items that can fail at all at a tiny alpha
        ask = detect or Detect(
            drop=target, power=power, max_items=max(1000, fewest_rejecting(policy.alpha))
        )
        needed = items_needed(ask, policy.alpha, observed).needed
    if observed is not None:
        assumed = f"{100 * observed[0]:.1f}% of items flip ({observed[1]})"
        if target is not None and observed[0] < target:
            assumed += "; a drop needs at least its own size in flips, so sized at the drop"
    elif detect and detect.discordance is not None:
        assumed = f"{100 * detect.discordance:.0f}% of items flip (stated)"
    else:
        assumed = "items flip at twice the drop (prior)"
    shown, show_n = _showing(policy, items, power, observed)
    return GatePower(
        suite=suite,
        items=items,
        alpha=policy.alpha,
        power=power,
        discordance=assumed,
        min_detectable_drop=_mdd_prior(items, policy.alpha, power, detect, observed),
        target_drop=target,
        items_needed=needed,
        sized=detect is not None,
        show_power=shown,
        show_items=show_n,
    )


def _showing(
    policy: AccuracyPolicy, items: int, power: float, observed: Observed | None
) -> tuple[float | None, int | None]:
    """Under rule 'bound': the chance a candidate with no true loss PASSes at `items`, and the
    items that reach the power asked (`show.power`, else `power`), at `show_discordance`."""
    margin = _margin_to_show(policy)
    if margin is None or items < 1:
        return None, None
    confidence = 1 - policy.alpha
    want = policy.show.power if policy.show is not None else power
    disc = max(show_discordance(policy, observed), 1e-6)  # 0: nothing flips, shown at once
    flags = bound_flags(_JUDGED_BY.get())  # the plan shows what the run will judge by
    return show_power(items, margin, disc, confidence, **flags), items_to_show(
        margin, disc, confidence, want, **flags
    )
