"""The context ladder's divergence gates: per bucket, each limit the profile sets (mean and
max KL, top-1 agreement) over the divergence of the recall answers' top-k logprobs where both
sides' contexts were identical (qgate/quality/ladder_divergence.py `bucket_divergence`)."""

from __future__ import annotations

from collections.abc import Sequence

from qgate.core.verdict import Verdict
from qgate.profile import ContextLadder
from qgate.profile.context_ladder import buckets
from qgate.quality.ladder_divergence import BucketDivergence, bucket_divergence
from qgate.quality.records import SuiteRun
from qgate.quality.stats import EPS, pct

__all__ = ["LIMITS", "ladder_divergence_verdicts"]

LIMITS = (
    ("max_mean_kld", "mean_kld", "mean KL"),
    ("max_max_kld", "max_kld", "max KL"),
    ("min_top1_agreement", "top1_agreement", "top-1 agreement"),
)
"""(profile key, metric, label) of each per-bucket divergence limit."""


def _verdict(
    suite: str, gate: str, metric: str, label: str, limit: float, d: BucketDivergence | None
) -> Verdict:
    floor = gate.startswith("min_")
    comparator = ">=" if floor else "<="
    value = None if d is None else d.value(metric)
    if d is None or value is None:
        why = "no run of both sides" if d is None else "no position compared"
        return Verdict(
            gate=f"{suite}.{gate}",
            suite=suite,
            observed=None,
            limit=limit,
            passed=False,
            reason=f"{suite}: divergence: {why} (logprobs with token ids on identical prompts)",
            metric=metric,
            comparator=comparator,
            n=0,
        )
    ok = value + EPS >= limit if floor else value <= limit + EPS
    if floor:
        detail = f"{label} {pct(value)} " + (">=" if ok else "<") + f" {pct(limit)} required"
    else:
        detail = f"{label} {value:.4g} " + ("<=" if ok else ">") + f" {limit:g} allowed"
    return Verdict(
        gate=f"{suite}.{gate}",
        suite=suite,
        observed=value,
        limit=limit,
        passed=ok,
        reason=f"{suite}: divergence over {d.positions} positions of identical context in "
        f"{d.items} items; {detail}",
        metric=metric,
        comparator=comparator,
        n=d.positions,
    )


def ladder_divergence_verdicts(spec: ContextLadder, runs: Sequence[SuiteRun]) -> list[Verdict]:
    """Per bucket, the verdict of each divergence limit the profile sets (none set: none)."""
    active = [(g, m, label, getattr(spec, g)) for g, m, label in LIMITS]
    active = [a for a in active if a[3] is not None]
    if not active:
        return []
    out: list[Verdict] = []
    for b in buckets(spec.start, spec.up_to):
        ref = [r for r in runs if r.suite == b.suite and r.role == "reference"]
        cand = [r for r in runs if r.suite == b.suite and r.role == "candidate"]
        d = (
            bucket_divergence(ref[0], cand[0], spec.top_k)
            if len(ref) == 1 and len(cand) == 1
            else None
        )
        out += [_verdict(b.suite, g, m, label, float(lim), d) for g, m, label, lim in active]
    return out
