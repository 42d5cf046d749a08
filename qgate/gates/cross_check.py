"""The divergence cross-check (issue 55 item 4): a speculating candidate's scores against its
own generation.

The divergence gates read the candidate's teacher-forced scores (prompt logprobs, the prefill
path). Speculative decoding has bent exactly those (vLLM #53488: wrong prompt logprobs on
some requests under MTP, NaN scores, perplexity drift) while the answers stayed right. So a
candidate that speculates (or any, with `cross_check: always`) also generates each prompt
greedily with top-k logprobs (the decode path, where it drafts and verifies). Where it
generated the reference's tokens, every position's context is the one its scores saw, and
the two paths must give the same distribution; the first position past a differing token
still has the scored context and is compared too.

`divergence.cross_check` PASSes when every sequence was generated again and each one's mean
KL(scored || generated) over its compared positions is within `max_cross_kld`. Otherwise the
scores are NOT TRUSTED: this gate FAILs and so does every divergence gate, whatever its
figure (a bent score can look better as easily as worse). A pure function of the records:
`qgate run` and `qgate verify` make it alike (quality derivation 5 on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qgate.core.verdict import Verdict
from qgate.profile import Profile
from qgate.profile.spec_plan import cross_checked
from qgate.profile.suites import registered
from qgate.quality.divergence import position_divergence
from qgate.quality.records import CrossSequence, DivergenceRun, DivergenceSequence

__all__ = ["CROSS_CHECK_FROM", "CrossSummary", "cross_check_verdicts", "cross_summary"]

CROSS_CHECK_FROM = 5
"""The quality derivation from which a cross-checked candidate's divergence is gated by it."""

NOT_TRUSTED = "NOT TRUSTED"


def _paired() -> str:
    """The paired suite's key (divergence): the registry's, not a name spelled here."""
    return next(e.key for e in registered() if e.paired)


@dataclass(frozen=True)
class CrossSummary:
    """What the second path shows: sequences compared, positions, the worst sequence."""

    sequences: int
    positions: int
    missing: tuple[str, ...]  # scored sequences with no second path (or no stored scores)
    worst: float | None  # the largest per-sequence mean KL(scored || generated)
    worst_id: str | None


def _compared(scored: DivergenceSequence, cross: CrossSequence) -> int:
    """Positions whose context both paths saw: the common prefix, and the position after it."""
    common = 0
    for a, b in zip(scored.token_ids, cross.token_ids, strict=False):
        if a != b:
            break
        common += 1
    return min(common + 1, len(scored.token_ids), len(cross.top_ids), len(cross.top_logprobs))


def _sequence_kld(
    scored: DivergenceSequence, cross: CrossSequence, top_k: int
) -> tuple[float, int] | None:
    """The mean KL(scored || generated) over the compared positions, and their count (None:
    nothing comparable)."""
    ids, lps = scored.candidate_top_ids, scored.candidate_top_logprobs
    if ids is None or lps is None:
        return None
    n = min(_compared(scored, cross), len(ids), len(lps))
    if n == 0:
        return None
    total = 0.0
    for i in range(n):
        try:
            total += position_divergence(
                dict(zip(ids[i], lps[i], strict=True)),
                dict(zip(cross.top_ids[i], cross.top_logprobs[i], strict=True)),
                scored.token_ids[i],
                top_k,
            ).kld
        except ValueError:  # an empty or ragged position: nothing comparable
            return None
    return total / n, n


def cross_summary(run: DivergenceRun) -> CrossSummary:
    """The second path against the scores, sequence by sequence."""
    cross = {c.id: c for c in run.cross_check or []}
    missing: list[str] = []
    worst: float | None = None
    worst_id: str | None = None
    sequences = positions = 0
    for seq in run.sequences:
        other = cross.get(seq.id)
        got = _sequence_kld(seq, other, run.top_k) if other is not None else None
        if got is None:
            missing.append(seq.id)
            continue
        kld, n = got
        sequences += 1
        positions += n
        if worst is None or not kld <= worst:  # a NaN is the worst
            worst, worst_id = kld, seq.id
    return CrossSummary(sequences, positions, tuple(missing), worst, worst_id)


def _verdict(passed: bool, observed: float | None, limit: float, n: int, reason: str) -> Verdict:
    return Verdict(
        gate=f"{_paired()}.cross_check",
        suite=_paired(),
        observed=observed,
        limit=limit,
        passed=passed,
        reason=reason,
        metric="max_sequence_cross_kld",
        comparator="<=",
        n=n,
    )


def _judged(run: DivergenceRun | None, limit: float) -> Verdict:
    if run is None:
        return _verdict(False, None, limit, 0, f"{NOT_TRUSTED}: no divergence records")
    s = cross_summary(run)
    head = "the candidate's scores against its own greedy generation"
    if s.missing:
        shown = ", ".join(s.missing[:3]) + (
            f" (+{len(s.missing) - 3})" if len(s.missing) > 3 else ""
        )
        return _verdict(
            False,
            s.worst,
            limit,
            s.positions,
            f"{NOT_TRUSTED}: {len(s.missing)} of {len(run.sequences)} sequences have no second "
            f"path to check their scores by ({shown})",
        )
    if s.worst is None:
        return _verdict(False, None, limit, 0, f"{NOT_TRUSTED}: no sequence to check")
    ok = s.worst <= limit
    detail = (
        f"worst sequence {s.worst_id}: mean KL {s.worst:.4g} "
        + ("<=" if ok else ">")
        + f" {limit:g} allowed, {s.positions} positions in {s.sequences} sequences"
    )
    if ok:
        return _verdict(True, s.worst, limit, s.positions, f"{head}: {detail}")
    return _verdict(False, s.worst, limit, s.positions, f"{NOT_TRUSTED}: {head} disagree: {detail}")


def cross_check_verdicts(
    profile: Profile, divergence: DivergenceRun | None, verdicts: Sequence[Verdict]
) -> list[Verdict]:
    """`verdicts` (the candidate's quality verdicts so far) with the cross-check gate after
    the divergence gates, each of them failed as NOT TRUSTED when it fails; unchanged when
    the profile asks no cross-check."""
    spec = profile.quality.divergence
    if spec is None or not cross_checked(profile):
        return list(verdicts)
    gate = _judged(divergence, spec.max_cross_kld)
    paired = _paired()
    ours = [v for v in verdicts if v.suite == paired]
    if divergence is None and ours and not all(v.settled for v in ours):
        # not run: the quality stage stopped once its verdict was FAIL (quality.stop)
        gate = gate.model_copy(update={"settled": False, "reason": ours[0].reason})
    out: list[Verdict] = []
    for v in verdicts:
        if v.suite == paired and not gate.passed and divergence is not None:
            why = f"{NOT_TRUSTED} ({gate.gate} failed): {v.reason}"
            v = v.model_copy(update={"passed": False, "reason": why})
        out.append(v)
    at = max((i + 1 for i, v in enumerate(out) if v.suite == paired), default=None)
    if at is None:
        out.append(gate)
    else:
        out.insert(at, gate)
    return out
