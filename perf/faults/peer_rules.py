"""The rules qgate's peers gate accuracy with, applied to qgate's own per-item records.

Each rule is a pure function of one suite's paired records (the reference's and the
candidate's answer right or wrong, item by item) and returns a `PeerVerdict`. They are what
teams run today, written down from their sources:

- `vllm_rtol`: vLLM CI's lm-eval correctness test (`.buildkite/lm-eval-harness/
  test_lm_eval_correctness.py`): `numpy.isclose(ground_truth, measured, rtol=0.08)`, that is
  |ground_truth - measured| <= 1e-8 + 0.08 * |measured|. Two-sided (a candidate far better
  also fails); the ground truth here is the reference's score from the same run, where vLLM
  stores it in a YAML file.
- `unpaired_z`: lm-eval's `scripts/model_comparator.py`: z = (acc_a - acc_b) /
  sqrt(se_a^2 + se_b^2) with lm-eval's standard error of a mean (the sample standard deviation
  over sqrt(n): sqrt(p(1 - p) / (n - 1)) for 0/1 scores), two-sided p = 2(1 - Phi(|z|)), fail
  when p <= 0.05. Unpaired: it ignores that both sides answered the same items.
- `absolute_floor`: InferenceX's and SGLang's nightly accuracy tests assert a fixed number
  (`assert metrics["accuracy"] >= 0.xx`), set by hand a few points under what was measured once.
  Here the floor is the reference's score less `margin` (5 points), fixed before the run.
- `mlperf_99`: MLPerf Inference's closed division: the candidate must reach 99% of the
  reference's accuracy (the 99.9% variant is stricter by the same rule).
- `nemo_wald`: NVIDIA NeMo Evaluator's `nel gate` (issue 53): the 95% paired Wald interval on
  the drop, (b - c)/n +- 1.96 sqrt(b + c - (b - c)^2 / n) / n with b lost and c gained; PASS
  when it lies within `max_drop` (its upper limit at or under it), FAIL when it lies wholly
  beyond (its lower limit above it), else INCONCLUSIVE. The only peer with three verdicts and
  the only one that reads the suite's margin; its interval has zero width when nothing flips.

Where a peer needs data qgate does not collect, it is left out rather than approximated:
MLPerf's ROUGE/perplexity targets on its own datasets (qgate scores exact answers), and the
throughput-at-accuracy curves InferenceX plots (qgate gates quality before speed, not a
sweep of both).

`items_needed` gives, for each rule, the items it would need to catch a drop with the power
qgate's gates are sized for (0.8 by default), from the observed accuracies and discordance,
so costs compare at equal power: qgate's exact McNemar test from qgate's own `smallest_n`,
the unpaired z-test from the two-proportion sample size, and the threshold rules from a
normal model of the observed difference (a threshold rule catches a drop smaller than its
threshold at no sample size: None).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

RULES = ("nemo_wald", "vllm_rtol", "unpaired_z", "absolute_floor", "mlperf_99")
THRESHOLD_RULES = RULES[1:]  # the rules with a sample size to fail a drop (items_needed)
RTOL = 0.08
Z_ALPHA = 0.05
Z95 = NormalDist().inv_cdf(0.975)  # NeMo's two-sided 95% interval
FLOOR_MARGIN = 0.05
MLPERF_SHARE = 0.99
Pairs = Sequence[tuple[bool, bool]]  # (reference right, candidate right), item by item


@dataclass(frozen=True)
class PeerVerdict:
    """One rule on one suite: whether it passes, and the figure it read."""

    rule: str
    passed: bool
    observed: float
    limit: float
    reason: str
    inconclusive: bool = False  # neither shown (nemo_wald only); passed is then False

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "INCONCLUSIVE" if self.inconclusive else "FAIL"


def accuracies(pairs: Pairs) -> tuple[float, float, int]:
    """(reference accuracy, candidate accuracy, items)."""
    n = len(pairs)
    if n == 0:
        raise ValueError("no paired items")
    return sum(r for r, _ in pairs) / n, sum(c for _, c in pairs) / n, n


def vllm_rtol(pairs: Pairs, rtol: float = RTOL) -> PeerVerdict:
    """numpy.isclose(reference, candidate, rtol): the tolerance scales with the candidate."""
    ref, cand, _ = accuracies(pairs)
    limit = 1e-8 + rtol * abs(cand)
    gap = abs(ref - cand)
    ok = gap <= limit
    return PeerVerdict("vllm_rtol", ok, gap, limit, f"|{ref:.3f} - {cand:.3f}| vs {limit:.3f}")


def _stderr(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / (n - 1)) if n > 1 else 0.0


def unpaired_z(pairs: Pairs, alpha: float = Z_ALPHA) -> PeerVerdict:
    """lm-eval's comparator: two-sided z on the two accuracies as independent samples."""
    ref, cand, n = accuracies(pairs)
    se = math.hypot(_stderr(ref, n), _stderr(cand, n))
    if se == 0:
        p = 1.0 if ref == cand else 0.0
    else:
        p = 2 * (1 - NormalDist().cdf(abs(ref - cand) / se))
    return PeerVerdict("unpaired_z", p > alpha, p, alpha, f"p {p:.3g} (two-sided) vs {alpha}")


def absolute_floor(pairs: Pairs, floor: float | None = None) -> PeerVerdict:
    """A fixed floor; by default the reference's score less FLOOR_MARGIN."""
    ref, cand, _ = accuracies(pairs)
    limit = ref - FLOOR_MARGIN if floor is None else floor
    return PeerVerdict("absolute_floor", cand >= limit, cand, limit, f"{cand:.3f} >= {limit:.3f}")


def mlperf_99(pairs: Pairs, share: float = MLPERF_SHARE) -> PeerVerdict:
    """The candidate reaches `share` of the reference's accuracy."""
    ref, cand, _ = accuracies(pairs)
    limit = share * ref
    return PeerVerdict("mlperf_99", cand >= limit, cand, limit, f"{cand:.3f} >= {limit:.3f}")


def nemo_wald(pairs: Pairs, max_drop: float) -> PeerVerdict:
    """NeMo Evaluator's `nel gate`: the 95% paired Wald interval on the drop against max_drop."""
    _, _, n = accuracies(pairs)
    lost = sum(r and not c for r, c in pairs)
    gained = sum(c and not r for r, c in pairs)
    drop = (lost - gained) / n
    half = Z95 * math.sqrt(max(lost + gained - (lost - gained) ** 2 / n, 0.0)) / n
    low, high = drop - half, drop + half
    eps = 1e-12
    passed, harm = high <= max_drop + eps, low > max_drop + eps
    reason = f"drop {drop:.3f}, 95% paired Wald [{low:.3f}, {high:.3f}] vs max_drop {max_drop}"
    return PeerVerdict("nemo_wald", passed, high, max_drop, reason, not passed and not harm)


def all_rules(pairs: Pairs, max_drop: float) -> dict[str, PeerVerdict]:
    """Every rule on one suite's pairs, by name (`max_drop`: the suite's margin, which only
    NeMo's rule reads; the others keep their own fixed lines)."""
    return {
        v.rule: v
        for v in (
            nemo_wald(pairs, max_drop),
            vllm_rtol(pairs),
            unpaired_z(pairs),
            absolute_floor(pairs),
            mlperf_99(pairs),
        )
    }


def _threshold_n(drop: float, margin: float, var: float, power: float) -> int | None:
    """Items for P(observed drop > margin) >= power when the true drop is `drop`."""
    if drop <= margin:
        return None
    if var <= 0:
        return 1
    z = NormalDist().inv_cdf(power)
    return max(1, math.ceil(var * (z / (drop - margin)) ** 2))


def items_needed(
    ref: float,
    cand: float,
    discordance: float,
    power: float = 0.8,
    alpha: float = 0.05,
    max_items: int = 1_000_000,
) -> dict[str, int | None]:
    """Items each rule needs to fail a candidate whose true accuracies are (ref, cand).

    None: no sample size reaches `power` (no drop, or one under a threshold rule's limit).
    The threshold rules' difference is paired (both sides answer the same items): its
    variance per item is discordance - drop^2.
    """
    from qgate.quality.stats import smallest_n  # the repository's own, on sys.path

    drop = ref - cand
    out: dict[str, int | None] = dict.fromkeys(("qgate_mcnemar", *THRESHOLD_RULES))
    if drop <= 0:
        return out
    disc = min(1.0, max(discordance, drop))
    out["qgate_mcnemar"] = smallest_n(power, drop, disc, alpha, max_items)
    za, zb = NormalDist().inv_cdf(1 - Z_ALPHA / 2), NormalDist().inv_cdf(power)
    pbar = (ref + cand) / 2
    spread = za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(
        ref * (1 - ref) + cand * (1 - cand)
    )
    out["unpaired_z"] = math.ceil((spread / drop) ** 2)
    var = max(disc - drop**2, 0.0)
    # rtol: |ref - cand| <= RTOL * cand, i.e. a drop beyond RTOL * cand / (1) of the candidate
    out["vllm_rtol"] = _threshold_n(drop, RTOL * cand, var, power)
    out["absolute_floor"] = _threshold_n(drop, FLOOR_MARGIN, var, power)
    out["mlperf_99"] = _threshold_n(drop, (1 - MLPERF_SHARE) * ref, var, power)
    return out
