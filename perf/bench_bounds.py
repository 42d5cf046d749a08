"""False PASS at the margin, for each rule (issue 53 item 7's simulation, computed exactly).

    PYTHONPATH=$PWD .venv/bin/python perf/bench_bounds.py          # the table, ~1 minute

A candidate whose true loss is exactly a rule's margin should not PASS more often than the
rule's stated level. For each rule the candidate's true loss is set at that rule's own
margin, and the chance that the rule PASSes it is summed exactly over every outcome of n
paired items (the four cells: both right, lost, gained, both wrong), not sampled:

- qgate bound: `qgate.core.bounds.loss_upper` (exact unconditional to 40 items, the
  corrected score bound above, quality derivation 6) within the margin, one-sided 95%; the
  margin is `max_drop`.
- qgate point (today's rule): the point drop within `max_drop` and its exact McNemar test
  not significant at alpha 0.05.
- NeMo paired Wald: NeMo Evaluator's `nel gate`: the two-sided 95% Wald interval on the
  paired drop within `max_drop` (its width is 0 when nothing flips).
- vLLM rtol .08, unpaired z, floor -5 points, MLPerf 99%: perf/faults/peer_rules.py's
  definitions, each at its own margin (rtol: a drop of 0.08/1.08 of the reference's
  accuracy; the floor: 5 points; MLPerf: 1% of the reference's accuracy; the z-test has no
  margin, so it is shown at qgate's).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf" / "faults"))

from peer_rules import FLOOR_MARGIN, MLPERF_SHARE, RTOL, Z_ALPHA  # noqa: E402

from qgate.core import bounds  # noqa: E402
from qgate.core.corrected_score import corrected_rejects  # noqa: E402
from qgate.quality.stats import mcnemar_rejects  # noqa: E402

ALPHA = 0.05
Z2 = NormalDist().inv_cdf(0.975)


def cells(n: int) -> tuple[np.ndarray, ...]:
    """Every (both right, lost, gained, both wrong) summing to n."""
    a, b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = a + b + c <= n
    a, b, c = a[keep], b[keep], c[keep]
    return a, b, c, n - a - b - c


def probs(n: int, rates: tuple[float, float, float, float]) -> np.ndarray:
    a, b, c, d = cells(n)
    lf = np.array([math.lgamma(k + 1) for k in range(n + 1)])
    logp = lf[n] - lf[a] - lf[b] - lf[c] - lf[d]
    for count, rate in zip((a, b, c, d), rates, strict=True):
        logp = logp + (np.where(count > 0, count * math.log(rate), 0.0) if rate > 0 else 0.0)
        if rate == 0:
            logp = np.where(count > 0, -np.inf, logp)
    return np.exp(logp)


def qgate_bound(n: int, margin: float) -> dict[tuple[int, int], bool]:
    """PASS per (lost, gained): the upper bound within the margin (the test it inverts, at the
    margin: tests/unit/core/test_bounds.py holds the two to agree)."""
    out = {}
    z = NormalDist().inv_cdf(1 - ALPHA)
    for lost in range(n + 1):
        for gained in range(n + 1 - lost):
            if n <= bounds.EXACT_MAX:
                out[(lost, gained)] = bounds.exact_p(lost, gained, n, margin) <= ALPHA
            else:
                out[(lost, gained)] = bool(corrected_rejects(lost, gained, n, margin, z))
    return out


def passes(rule: str, n: int, margin: float) -> np.ndarray:
    a, b, c, _ = cells(n)
    ref = (a + b) / n
    cand = (a + c) / n
    drop = (b - c) / n
    if rule == "qgate bound":
        table = qgate_bound(n, margin)
        return np.array([table[(int(x), int(y))] for x, y in zip(b, c, strict=True)])
    if rule == "qgate point":
        sig = np.array([mcnemar_rejects(int(x), int(y), ALPHA) for x, y in zip(b, c, strict=True)])
        return (drop <= margin + 1e-12) & ~sig
    if rule == "NeMo paired Wald":
        se = np.sqrt(np.maximum(b + c - (b - c) ** 2 / n, 0.0)) / n
        return drop + Z2 * se <= margin + 1e-12
    if rule == "vLLM rtol .08":
        return np.abs(ref - cand) <= 1e-8 + RTOL * np.abs(cand)
    if rule == "unpaired z":
        se = np.hypot(np.sqrt(ref * (1 - ref) / (n - 1)), np.sqrt(cand * (1 - cand) / (n - 1)))
        z = np.where(se > 0, np.abs(ref - cand) / np.where(se > 0, se, 1), 0.0)
        p = 2 * (1 - np.vectorize(NormalDist().cdf)(z))
        return np.where(se > 0, p > Z_ALPHA, ref == cand)
    if rule == "floor -5pt":
        return cand >= ref - FLOOR_MARGIN - 1e-12
    if rule == "MLPerf 99%":
        return cand >= MLPERF_SHARE * ref - 1e-12
    raise ValueError(rule)


def rule_margin(rule: str, max_drop: float, ref_acc: float) -> float:
    """The true loss at which `rule` stands at its own line."""
    return {
        "vLLM rtol .08": ref_acc * RTOL / (1 + RTOL),
        "floor -5pt": FLOOR_MARGIN,
        "MLPerf 99%": (1 - MLPERF_SHARE) * ref_acc,
    }.get(rule, max_drop)


RULES = (
    "qgate bound",
    "qgate point",
    "NeMo paired Wald",
    "vLLM rtol .08",
    "unpaired z",
    "floor -5pt",
    "MLPerf 99%",
)


def false_pass(rule: str, n: int, max_drop: float, ref_acc: float, gained: float) -> float:
    loss = rule_margin(rule, max_drop, ref_acc)
    lost = loss + gained
    rates = (ref_acc - lost, lost, gained, 1 - ref_acc - gained)
    if min(rates) < 0:
        return float("nan")
    return float(probs(n, rates)[passes(rule, n, loss)].sum())


def main() -> None:
    t0 = time.monotonic()
    print("False PASS at each rule's margin (exact over the four cells), one-sided level 5%")
    for max_drop, ref_acc in ((0.15, 0.3), (0.05, 0.8)):
        for gained in (0.0, 0.03):
            print(
                f"\nmax_drop {max_drop}, reference accuracy {ref_acc}, gained rate {gained} "
                "(the candidate's lost rate is the margin plus it)"
            )
            sizes = (10, 20, 40, 81, 160)
            print(f"| rule | {' | '.join(f'n={n}' for n in sizes)} |")
            print("|---|" + "---|" * len(sizes))
            for rule in RULES:
                row = [false_pass(rule, n, max_drop, ref_acc, gained) for n in sizes]
                print(f"| {rule} | " + " | ".join(f"{x:.3f}" for x in row) + " |")
    print(f"\n({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
