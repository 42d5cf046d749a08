"""What the sampling canaries add to their gate: the parameters the candidate ignored, named.

The canaries are one result, `sampling` (qgate/quality/sampling_suite.py), gated by the
exact-answer gates (`max_flips`, default 0). Its reason then says which parameter each lost
canary checks and what both sides' answers showed ("temperature: reference 4 distinct of 4,
candidate 1 distinct of 4"), and which canaries were not judged because the reference did
not honour them either. A pure function of the records: `qgate verify` re-derives it.
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.core.verdict import Verdict
from qgate.profile import QualitySpec
from qgate.profile.suites import suite_entry
from qgate.quality.records import SuiteRun

__all__ = ["sampling_verdicts"]


def _run(runs: Sequence[SuiteRun], suite: str, role: str) -> SuiteRun | None:
    return next((r for r in runs if r.suite == suite and r.role == role), None)


def sampling_verdicts(
    spec: QualitySpec, runs: Sequence[SuiteRun], verdicts: list[Verdict]
) -> list[Verdict]:
    """`verdicts` with the canaries' gates naming the parameters ignored and those not judged."""
    if spec.sampling is None:
        return verdicts
    ((suite, _),) = suite_entry("sampling").results_of(spec.sampling)
    ref, cand = _run(runs, suite, "reference"), _run(runs, suite, "candidate")
    if ref is None or cand is None:
        return verdicts
    theirs = {i.id: i for i in cand.items}
    ignored = [
        f"{i.id}: reference {i.answer}, candidate {theirs[i.id].answer}"
        for i in ref.items
        if i.correct and i.id in theirs and not theirs[i.id].correct
    ]
    unjudged = [f"{i.id} ({i.answer})" for i in ref.items if not i.correct]
    said = (f"; ignored by the candidate: {'; '.join(ignored)}" if ignored else "") + (
        f"; not judged, the reference did not honour them either: {', '.join(unjudged)}"
        if unjudged
        else ""
    )
    if not said:
        return verdicts
    return [
        v.model_copy(update={"reason": v.reason + said}) if v.suite == suite else v
        for v in verdicts
    ]
