"""The reference's own noise floor: how often it disagrees with itself, and what that sets.

Pure functions of the records (`qgate run` and `qgate verify` call the same ones). The floor
is the reference's first answers (its quality stage) against its second asks of the same
items at another concurrency in the same life (`quality.noise_floor`). An item counts as a
self-disagreement when its right/wrong changed between the two asks; the rate is pooled over
every result and bounded above, one-sided Clopper-Pearson at the profile's confidence (0 of
N still bounds the rate by 1 - (1 - confidence)^(1/N), never 0). A result's flip allowance
is ceil(upper x n) for its n items: what the reference's own noise can lose at that bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import Field

from qgate.core.records import Record
from qgate.core.verdict import Verdict
from qgate.profile import QualitySpec
from qgate.profile.noise_floor import FLOOR_SUITES
from qgate.profile.suites import configured
from qgate.quality.divergence import DivergenceSummary, summarize_divergence
from qgate.quality.records import DivergenceRun, SuiteRun

__all__ = [
    "FLOOR_FROM",
    "FloorRecords",
    "FloorSummary",
    "binomial_upper",
    "floor_results",
    "floor_summary",
    "mark_floor",
]

INSIDE = "INSIDE NOISE FLOOR"
FLOOR_FROM = 4
"""The quality derivation that introduced the floor's records: from it, verify holds them to the
plan (qgate/report/verify/floor_plan.py)."""


def floor_results(spec: QualitySpec) -> list[str]:
    """The result ids the reference asks again (qgate/quality/floor_run.py): every result of
    its math and recall suites, in the order they run."""
    return [
        rid
        for entry, setting in configured(spec)
        if entry.key in FLOOR_SUITES
        for rid, _ in entry.results_of(setting)
    ]


class FloorRecords(Record):
    """What the reference answered when it was asked again (`quality.noise_floor`)."""

    concurrency: int = Field(description="Requests in flight in the quality stage (first ask).")
    second_concurrency: int = Field(description="Requests in flight for the second ask.")
    confidence: float = Field(description="Level of the upper bound on the disagreement rate.")
    runs: list[SuiteRun] = Field(
        default_factory=list, description="The reference's second asks, one run per result."
    )
    divergence: DivergenceRun | None = Field(
        default=None,
        description="The reference's continuations scored by the reference again at the "
        "second concurrency: KL(first || second) per position (None: not measured).",
    )
    wall_s: float = Field(default=0.0, description="Seconds the second asks took.")


@dataclass(frozen=True)
class FloorResult:
    """One result's two asks compared item by item."""

    suite: str
    n: int
    changed: int
    """Items whose right/wrong differs between the two asks."""
    text_changed: int
    """Items whose answer text differs (right/wrong may not)."""


@dataclass(frozen=True)
class FloorSummary:
    """The floor, pooled over results, with its upper bound and what it allows."""

    results: tuple[FloorResult, ...]
    n: int
    changed: int
    upper: float
    confidence: float
    concurrency: int
    second_concurrency: int
    divergence: DivergenceSummary | None

    def allowance(self, items: int) -> int:
        """Flips the reference's own noise can account for among `items` items."""
        return math.ceil(self.upper * items - 1e-9)

    def text(self) -> str:
        """One line: the floor and its bound."""
        rate = self.changed / self.n if self.n else 0.0
        parts = [
            f"the reference disagreed with itself on {self.changed} of {self.n} items "
            f"({100 * rate:.1f}%; upper {self.confidence:g} bound {100 * self.upper:.1f}%) "
            f"asked again at concurrency {self.second_concurrency} (first at "
            f"{self.concurrency})"
        ]
        if self.divergence is not None:
            d = self.divergence
            parts.append(
                f"its divergence against itself: mean KL {d.mean_kld:.3g}, p99 "
                f"{d.p99_kld:.3g}, top-1 agreement {100 * d.top1_agreement:.1f}% "
                f"({d.positions} positions)"
            )
        return "; ".join(parts)


def _log_binom_cdf(k: int, n: int, p: float) -> float:
    """log P(X <= k) for X ~ Binomial(n, p), 0 < p < 1."""
    terms = [
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * math.log(p)
        + (n - i) * math.log1p(-p)
        for i in range(k + 1)
    ]
    top = max(terms)
    return top + math.log(sum(math.exp(t - top) for t in terms))


def binomial_upper(k: int, n: int, confidence: float) -> float:
    """One-sided Clopper-Pearson upper bound on p from k events in n trials."""
    if n <= 0 or k >= n:
        return 1.0
    target = math.log(1.0 - confidence)
    low, high = k / n, 1.0
    for _ in range(80):  # P(X <= k) falls as p grows: bisect to where it is 1 - confidence
        mid = (low + high) / 2
        if _log_binom_cdf(k, n, mid) > target:
            low = mid
        else:
            high = mid
    return high


def floor_summary(records: FloorRecords | None, first: Sequence[SuiteRun]) -> FloorSummary | None:
    """The floor of `records` against the reference's first runs (None: no floor measured)."""
    if records is None:
        return None
    firsts = {r.suite: r for r in first if r.role == "reference"}
    results = []
    for again in records.runs:
        before = firsts.get(again.suite)
        if before is None:
            continue
        by_id = {i.id: i for i in before.items}
        pairs = [(by_id[i.id], i) for i in again.items if i.id in by_id]
        results.append(
            FloorResult(
                suite=again.suite,
                n=len(pairs),
                changed=sum(a.correct != b.correct for a, b in pairs),
                text_changed=sum(a.output != b.output for a, b in pairs),
            )
        )
    n = sum(r.n for r in results)
    changed = sum(r.changed for r in results)
    div = records.divergence
    return FloorSummary(
        results=tuple(results),
        n=n,
        changed=changed,
        upper=binomial_upper(changed, n, records.confidence),
        confidence=records.confidence,
        concurrency=records.concurrency,
        second_concurrency=records.second_concurrency,
        divergence=summarize_divergence(div) if div and any(s.kld for s in div.sequences) else None,
    )


_DIVERGENCE_STAT = {
    "max_mean_kld": ("mean_kld", "mean KL"),
    "max_p99_kld": ("p99_kld", "p99 KL"),
    "max_max_kld": ("max_kld", "max KL"),
    "min_top1_agreement": ("top1_agreement", "top-1 agreement"),
}


def _divergence_inside(gate: str, limit: float, floor: DivergenceSummary) -> str | None:
    stat = _DIVERGENCE_STAT.get(gate)
    if stat is None:
        return None
    value = float(getattr(floor, stat[0]))
    inside = value < limit if gate.startswith("min_") else value > limit
    if not inside:
        return None
    return f"; {INSIDE}: the reference against itself has {stat[1]} {value:.4g}"


def mark_floor(
    verdicts: Sequence[Verdict],
    derived: dict[str, int],
    floor: FloorSummary | None,
) -> list[Verdict]:
    """The verdicts with what the floor says about their limits: a `max_flips` it derived
    (`derived`: gate -> allowance) names its rule; a limit the profile set inside the floor
    (fewer flips than the floor allows, a divergence limit its own divergence breaks) is
    marked INSIDE NOISE FLOOR. Unchanged when no floor was measured."""
    if floor is None:
        return list(verdicts)
    out = []
    rate = f"{floor.changed} of {floor.n} self-disagreements, upper bound {100 * floor.upper:.1f}%"
    for v in verdicts:
        tail = ""
        name = v.gate.rpartition(".")[2]
        if v.gate in derived:
            tail = f"; limit from the noise floor: ceil({rate} x {v.n} items)"
        elif name == "max_flips" and v.limit is not None and v.n:
            allowed = floor.allowance(v.n)
            if v.limit < allowed:
                tail = f"; {INSIDE}: the reference's own noise allows {allowed} ({rate})"
        elif v.suite == "divergence" and floor.divergence is not None and v.limit is not None:
            tail = _divergence_inside(name, v.limit, floor.divergence) or ""
        out.append(v.model_copy(update={"reason": v.reason + tail}) if tail else v)
    return out
