"""The sampled test's distribution gate: did the candidate's sampled answers get narrower or
wider than the reference's? (`quality.sampled`; its accuracy gate, `sampled.max_drop`, is the
paired bound for fractional scores of qgate/gates/score.py, made by the exact-answer loop.)

Per question the diversity of its k samples on each side: the share of pairs of samples whose
texts differ (qgate/quality/sampled_data.py), an unbiased estimate of the chance that two
samples differ, so the margin means the same at every k (a count of distinct texts saturates
as k nears the number of likely texts: in perf/bench_sampled.py's first version, which
counted them, a halved temperature PASSed 61% of the time at k = 16). The gate bounds the
mean paired change of it with the same one-sided (1 - alpha) bounds as a fractional score
(`scored_bounds`: the paired t bound, never narrower than what n clean 0/1 items show), in
both directions:

- FAIL when a lower bound shows the change beyond `max_diversity_change`: narrower names an
  ignored or lowered temperature (a greedy fall-back gives one text per question), or a
  top_p/top_k the reference did not apply; wider a temperature raised or a truncation ignored;
- PASS when both upper bounds are within it (two one-sided bounds: an equivalence test), and
  the reference varied enough that a collapse to one text per question would have FAILed;
- INCONCLUSIVE otherwise, saying which of the two was missing.

Why a bound on the mean diversity rather than a test against no change (a sign or Wilcoxon
test, or Gao et al.'s permutation test of model equality, arXiv 2410.20247): a benign candidate
(INT8 weights, another max_num_seqs) moves each question's distribution a little, and a test of
exact equality rejects any such move once N is large: the detection benchmark's null of benign
candidates would FAIL at the sizes that make the test powerful. A margin says how much change
matters, and the same bound judges accuracy, so the two gates of the suite read alike; what it
catches at each (N, k) is measured by perf/bench_sampled.py, not assumed.
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.core.verdict import Verdict
from qgate.gates.looks import judged_policy
from qgate.gates.score import scored_bounds
from qgate.profile import QualitySpec
from qgate.profile.sampled import SampledSuite
from qgate.profile.suites import suite_entry
from qgate.quality.records import SuiteRun
from qgate.quality.sampled_data import grade_sampled

__all__ = ["diversity_verdict", "sampled_verdicts"]

_EPS = 1e-12
GATE = "max_diversity_change"


def _run(runs: Sequence[SuiteRun], suite: str, role: str) -> SuiteRun | None:
    found = [r for r in runs if r.suite == suite and r.role == role]
    return found[0] if len(found) == 1 else None


def _diversities(setting: SampledSuite, ref: SuiteRun, cand: SuiteRun) -> list[tuple[float, float]]:
    theirs = {i.id: i for i in cand.items}
    return [
        (
            grade_sampled(i.output, i.expected, setting.samples).diversity,
            grade_sampled(theirs[i.id].output, i.expected, setting.samples).diversity,
        )
        for i in ref.items
        if i.id in theirs
    ]


def diversity_verdict(
    setting: SampledSuite, suite: str, pairs: Sequence[tuple[float, float]]
) -> Verdict:
    """The distribution gate on (reference, candidate) diversities, one pair per question."""
    margin, n = setting.max_diversity_change, len(pairs)
    gate = f"{suite}.{GATE}"
    if n == 0:
        return Verdict(
            gate=gate,
            suite=suite,
            observed=None,
            limit=margin,
            passed=False,
            reason=f"{suite}: no paired questions to compare",
        )
    ref = [r for r, _ in pairs]
    cand = [c for _, c in pairs]
    lost_low, lost_high = scored_bounds(ref, cand, setting.alpha)
    gained_low, gained_high = scored_bounds(cand, ref, setting.alpha)
    collapse_low, _ = scored_bounds(ref, [0.0] * n, setting.alpha)
    level = f"{100 * (1 - setting.alpha):g}%"
    seen = (
        f"mean diversity candidate {sum(cand) / n:.3f} vs reference {sum(ref) / n:.3f} "
        f"({n} questions, {setting.samples} samples at T={setting.temperature:g})"
    )
    allowed = f"{setting.max_diversity_change:g} allowed"
    passed, inconclusive = False, False
    if lost_low > margin + _EPS:
        why = (
            f"narrower by at least {lost_low:.3f} ({level} lower bound) > {allowed}: "
            "temperature ignored or lowered (a greedy fall-back gives one text per question), "
            "or a top_p/top_k the reference did not apply"
        )
    elif gained_low > margin + _EPS:
        why = (
            f"wider by at least {gained_low:.3f} ({level} lower bound) > {allowed}: "
            "temperature raised or ignored, or a top_p/top_k truncation ignored"
        )
    elif collapse_low <= margin + _EPS:
        inconclusive = True
        why = (
            f"INCONCLUSIVE: the reference's samples vary too little for an ignored temperature "
            f"to show (a collapse to one text per question would be bounded at {collapse_low:.3f}"
            f", not beyond {allowed}); raise temperature, max_tokens or prompts"
        )
    elif max(lost_high, gained_high) <= margin + _EPS:
        passed = True
        why = (
            f"changes by at most {max(lost_high, gained_high):.3f} either way ({level} upper "
            f"bounds) <= {allowed}: shown within the margin"
        )
    else:
        inconclusive = True
        why = (
            f"INCONCLUSIVE: changes by at most {lost_high:.3f} narrower, {gained_high:.3f} "
            f"wider ({level} upper bounds), not within {allowed}, and no change beyond it "
            "is shown"
        )
    return Verdict(
        gate=gate,
        suite=suite,
        observed=max(lost_high, gained_high),
        limit=margin,
        passed=passed,
        inconclusive=inconclusive,
        reason=f"{suite}: {seen}; {why}",
        metric="diversity_change_upper_bound",
        comparator="<=",
        n=n,
    )


def sampled_verdicts(
    spec: QualitySpec, runs: Sequence[SuiteRun], verdicts: list[Verdict]
) -> list[Verdict]:
    """`verdicts` with the sampled test's distribution gate after its accuracy gates."""
    setting = spec.sampled
    if setting is None:
        return verdicts
    judged = judged_policy(spec, setting)
    assert isinstance(judged, SampledSuite)
    ((suite, _),) = suite_entry("sampled").results_of(setting)
    ref, cand = _run(runs, suite, "reference"), _run(runs, suite, "candidate")
    pairs = [] if ref is None or cand is None else _diversities(judged, ref, cand)
    made = diversity_verdict(judged, suite, pairs)
    if ref is None or cand is None:
        made = made.model_copy(update={"reason": f"{suite}: no paired runs of both sides"})
    last = max((k for k, v in enumerate(verdicts) if v.suite == suite), default=len(verdicts) - 1)
    return verdicts[: last + 1] + [made] + verdicts[last + 1 :]
