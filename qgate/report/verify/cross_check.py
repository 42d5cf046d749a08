"""The divergence cross-check's raw records held to their own arithmetic (issue 55 item 4).

The candidate's own greedy generations and their top-k logprobs are raw observations: signed,
not re-derived. The cross-check gate is re-derived from them by the judge
(qgate/gates/cross_check.py); here they are held to their shape, so that a record the run
could not have made is refused before the gate reads it.
"""

from __future__ import annotations

from qgate.errors import VerificationFailed
from qgate.gates.cross_check import CROSS_CHECK_FROM
from qgate.profile import Profile
from qgate.profile.spec_plan import cross_checked
from qgate.quality.records import DivergenceRun

__all__ = ["check_cross_planned", "check_cross_records"]


def check_cross_planned(run: DivergenceRun, profile: Profile, derivation: int) -> str | None:
    """Hold the cross-check's records to the plan (quality derivation 5 on): where the profile
    asks the candidate's scores cross-checked, one generation per scored sequence (a run that
    could not generate one fails, it writes no report: a missing one was taken out); where it
    asks none, none. The checked line, or None where there is nothing to hold."""
    if derivation < CROSS_CHECK_FROM:
        return None
    asked = cross_checked(profile)
    held = {c.id for c in run.cross_check or []}
    if not asked:
        if run.cross_check is not None:
            raise VerificationFailed(
                "quality.divergence.cross_check: generations the profile does not ask for "
                "(the candidate does not speculate and cross_check is not 'always')"
            )
        return None
    gone = [s.id for s in run.sequences if s.id not in held]
    if gone:
        raise VerificationFailed(
            f"quality.divergence.cross_check: the profile asks every scored sequence "
            f"generated again; {len(gone)} of {len(run.sequences)} have no generation "
            f"({', '.join(gone[:3])})"
        )
    return f"{len(held)} divergence cross-check generations held to the plan, one a sequence"


def check_cross_records(run: DivergenceRun) -> None:
    """The second scoring path's raw records (signed, not re-derived) held to their own
    arithmetic: at most one per scored sequence (a missing one leaves the gate NOT TRUSTED),
    each as long as its scored continuation, ids and logprobs paired position by position,
    at most top_k ids (and the generated one) a position, no logprob above 0 or NaN."""
    if run.cross_check is None:
        return
    scored = {s.id: len(s.token_ids) for s in run.sequences}
    seen: set[str] = set()
    for c in run.cross_check:
        where = f"divergence cross-check {c.id}"
        if c.id not in scored or c.id in seen:
            raise VerificationFailed(f"{where}: not one of the scored sequences, or twice")
        seen.add(c.id)
        n = scored[c.id]
        if not len(c.token_ids) == len(c.top_ids) == len(c.top_logprobs) == n:
            raise VerificationFailed(
                f"{where}: {len(c.token_ids)} tokens, {len(c.top_ids)} and "
                f"{len(c.top_logprobs)} logprob positions, {n} scored"
            )
        for i, (ids, lps) in enumerate(zip(c.top_ids, c.top_logprobs, strict=True)):
            if len(ids) != len(lps) or not 0 < len(ids) <= run.top_k + 1:
                raise VerificationFailed(
                    f"{where} position {i}: {len(ids)} ids, {len(lps)} logprobs (top_k {run.top_k})"
                )
            if any(not lp <= 0.0 for lp in lps):  # NaN included
                raise VerificationFailed(f"{where} position {i}: a logprob above 0 or NaN")
