"""The acceptance gate of a speculative candidate, and the checks of its counters (pure).

A candidate speculates when its engine arguments set `speculative_config`. Over its quality
stage (first to last counter snapshot, qgate/quality/spec_counters.py) the acceptance length
is 1 + accepted / drafts and the acceptance rate accepted / draft tokens. Gates:

- `speculative.acceptance_length`: at least `quality.speculative.min_acceptance_length`, and
  at least `min_share_of_reference` of the reference's where the reference speculated too
  (the higher limit holds). Fewer than `min_drafts` drafts (speculation that never ran, or a
  server without the counters) is NOT EXERCISED, a verdict of its own that never passes.
- `speculative.counters`: the counters' own arithmetic on both sides: accepted tokens never
  above draft tokens, the per-position counts adding up to the accepted total, no counter
  going backwards between snapshots (a server restarted under the stage, or a forged record).

`qgate run` judges them with the other quality gates and `qgate verify` re-derives them from
the snapshots the report holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qgate.core.records import Role
from qgate.core.verdict import Verdict
from qgate.profile import Profile, SpeculativeSpec
from qgate.profile.spec_plan import speculates, speculative_policy
from qgate.quality.spec_counters import (
    ACCEPTED,
    DRAFT_TOKENS,
    DRAFTS,
    PER_POSITION,
    SpecSnapshot,
)

__all__ = [
    "Acceptance",
    "acceptance",
    "counter_problems",
    "evaluate_speculative",
    "speculates",
    "speculative_policy",
]

SUITE = "speculative"


@dataclass(frozen=True)
class Acceptance:
    """What a side's speculation did over its quality stage (counter deltas)."""

    drafts: float
    draft_tokens: float
    accepted: float
    per_position: dict[str, float]

    @property
    def length(self) -> float | None:
        """1 + accepted / drafts: tokens gained per draft (None without drafts)."""
        return 1.0 + self.accepted / self.drafts if self.drafts > 0 else None

    @property
    def rate(self) -> float | None:
        """accepted / draft tokens (None without draft tokens)."""
        return self.accepted / self.draft_tokens if self.draft_tokens > 0 else None


def _of(snapshots: Sequence[SpecSnapshot], role: Role) -> list[SpecSnapshot]:
    return [s for s in snapshots if s.role == role]


def acceptance(snapshots: Sequence[SpecSnapshot], role: Role) -> Acceptance | None:
    """The side's counter deltas from its first snapshot to its last; None when it has fewer
    than two snapshots or its last holds no speculative-decoding counters."""
    own = _of(snapshots, role)
    if len(own) < 2 or DRAFTS not in own[-1].counters:
        return None
    first, last = own[0].counters, own[-1].counters

    def delta(key: str) -> float:
        return last.get(key, 0.0) - first.get(key, 0.0)

    positions = sorted(k for k in last if k.startswith(PER_POSITION + "{"))
    return Acceptance(
        drafts=delta(DRAFTS),
        draft_tokens=delta(DRAFT_TOKENS),
        accepted=delta(ACCEPTED),
        per_position={k[len(PER_POSITION) :]: delta(k) for k in positions},
    )


def counter_problems(snapshots: Sequence[SpecSnapshot]) -> list[str]:
    """One line per broken counter rule, for each side in turn (empty when they hold)."""
    out: list[str] = []
    for role in ("reference", "candidate"):
        own = _of(snapshots, role)
        for a, b in zip(own, own[1:], strict=False):
            for key in sorted(a.counters.keys() | b.counters.keys()):
                was, now = a.counters.get(key, 0.0), b.counters.get(key, 0.0)
                if now < was:
                    out.append(f"{role}: {key} went back from {was:g} to {now:g} ({b.at})")
        for snap in own:
            c = snap.counters
            if c.get(ACCEPTED, 0.0) > c.get(DRAFT_TOKENS, 0.0):
                out.append(
                    f"{role}: {c[ACCEPTED]:g} accepted tokens above "
                    f"{c.get(DRAFT_TOKENS, 0.0):g} draft tokens ({snap.at})"
                )
            per = [v for k, v in c.items() if k.startswith(PER_POSITION + "{")]
            if per and sum(per) != c.get(ACCEPTED, 0.0):
                out.append(
                    f"{role}: accepted tokens by position add up to {sum(per):g}, "
                    f"not the {c.get(ACCEPTED, 0.0):g} accepted ({snap.at})"
                )
    return out


def _limit(policy: SpeculativeSpec, reference: Acceptance | None) -> tuple[float | None, str]:
    floor = policy.min_acceptance_length
    ref_len = reference.length if reference is not None else None
    if ref_len is None:
        if floor is None:
            return (
                None,
                "no floor (quality.speculative.min_acceptance_length), no speculative reference",
            )
        return floor, f"floor {floor:g}"
    share = policy.min_share_of_reference * ref_len
    if floor is not None and floor > share:
        return (
            floor,
            f"floor {floor:g} (above {policy.min_share_of_reference:g} x reference {ref_len:.3f})",
        )
    return share, f"{policy.min_share_of_reference:g} x reference {ref_len:.3f}"


def _length_verdict(policy: SpeculativeSpec, snapshots: Sequence[SpecSnapshot]) -> Verdict:
    gate = f"{SUITE}.acceptance_length"
    cand = acceptance(snapshots, "candidate")
    limit, rule = _limit(policy, acceptance(snapshots, "reference"))
    base = {"gate": gate, "suite": SUITE, "metric": "acceptance_length", "comparator": ">="}
    if cand is None:
        return Verdict(
            **base,
            observed=None,
            limit=limit,
            passed=False,
            exercised=False,
            reason="NOT EXERCISED: the candidate's server reported no speculative-decoding "
            "counters around its quality suites (speculation not applied, or no /metrics)",
        )
    drafts = int(cand.drafts)
    if cand.drafts < policy.min_drafts or cand.length is None:
        return Verdict(
            **base,
            observed=cand.length,
            limit=limit,
            passed=False,
            n=drafts,
            exercised=False,
            reason=f"NOT EXERCISED: {drafts} drafts over the quality suites "
            f"(at least {policy.min_drafts} needed)",
        )
    rate = f"{cand.rate:.1%}" if cand.rate is not None else "-"
    seen = (
        f"acceptance length {cand.length:.3f} ({cand.accepted:g} accepted of "
        f"{cand.draft_tokens:g} draft tokens in {drafts} drafts, rate {rate})"
    )
    if limit is None:
        return Verdict(
            **base,
            observed=cand.length,
            limit=None,
            passed=True,
            n=drafts,
            exercised=True,
            reason=f"{seen}; {rule}: only that speculation ran is gated",
        )
    passed = cand.length >= limit
    return Verdict(
        **base,
        observed=cand.length,
        limit=limit,
        passed=passed,
        n=drafts,
        exercised=True,
        reason=f"{seen} {'>=' if passed else '<'} {limit:.3f} ({rule})",
    )


def evaluate_speculative(profile: Profile, snapshots: Sequence[SpecSnapshot]) -> list[Verdict]:
    """The acceptance gate and the counter checks; none when the profile has no acceptance
    gate (no `quality.speculative` and a candidate that does not speculate)."""
    policy = speculative_policy(profile)
    if policy is None:
        return []
    problems = counter_problems(snapshots)
    counters = Verdict(
        gate=f"{SUITE}.counters",
        suite=SUITE,
        observed=float(len(problems)),
        limit=0.0,
        passed=not problems,
        metric="counter_problems",
        comparator="<=",
        n=len(snapshots),
        reason=problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        if problems
        else f"{len(snapshots)} snapshots: accepted <= draft tokens, positions add up, "
        "no counter went back",
    )
    return [_length_verdict(policy, snapshots), counters]
