"""The outcome of one gate, quality or perf: observed, limit, passed, and why.

Gates are pure functions that return these (qgate/gates/quality.py,
qgate/gates/speed.py); run and verify compare them field by field. `verdict_word` and
`not_exercised_lines` read stored verdicts for people (the CLI and the report's views).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from qgate.core.records import Record

__all__ = ["Comparator", "Verdict", "not_exercised_lines", "verdict_word"]

Comparator = Literal["<=", ">=", "<", ">"]


class Verdict(Record):
    """The outcome of one gate: what was observed, the limit, and why it passed or failed."""

    gate: str = Field(description="Gate id, e.g. 'math.short.max_drop'.")
    suite: str = Field(description="Suite the gate reads.")
    observed: float | None = Field(description="Observed value (None when not computable).")
    limit: float | None = Field(description="Limit from the profile.")
    passed: bool = Field(description="Whether the gate holds.")
    underpowered: bool = Field(
        default=False,
        description="The sample is too small to detect the violation this gate forbids.",
    )
    reason: str = Field(description="One line for people.")
    # The fields an eval-result predicate asks for (in-toto attestation proposal #565/#575);
    # None in reports made before they were recorded (quality derivation 1) and in perf gates.
    metric: str | None = Field(
        default=None, description="What `observed` measures, e.g. 'accuracy_drop', 'mcnemar_p'."
    )
    comparator: Comparator | None = Field(
        default=None, description="The gate holds when `observed <comparator> limit`."
    )
    n: int | None = Field(
        default=None,
        description="Sample size the observed value comes from (paired items, scored positions).",
    )
    power: float | None = Field(
        default=None,
        description="Power of the exact McNemar test to detect the drop the gate must catch "
        "(`detect.drop`, else `max_drop`) at this n and the observed discordance.",
    )
    min_detectable_drop: float | None = Field(
        default=None, description="Smallest drop detectable at the policy's power and alpha."
    )
    inconclusive: bool = Field(
        default=False,
        description="A gate whose evidence showed neither that the loss is within the margin "
        "nor harm (issue 53): a non-inferiority gate (rule 'bound'), the pooled envelope gate, "
        "or a life gate that judged no item. INCONCLUSIVE, never passed; False for every other "
        "verdict.",
    )
    settled: bool = Field(
        default=True,
        description="False when the suite stopped early (quality.stop) before this gate's "
        "verdict was decided by its records; such a gate counts as not passed.",
    )
    exercised: bool | None = Field(
        default=None,
        description="Gates of a reuse pass (quality.reuse): whether the candidate's pass served "
        "at least the stated share from the path it names; False is NOT EXERCISED, a verdict of "
        "its own that never passes. None: a gate that exercises no particular path.",
    )


def verdict_word(v: Verdict) -> str:
    """PASS, FAIL or INCONCLUSIVE: what one gate's verdict says, in one word."""
    if v.passed:
        return "PASS"
    return "INCONCLUSIVE" if v.inconclusive else "FAIL"


def not_exercised_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """One line per pass and suite that was NOT EXERCISED (its share against the stated one),
    and one per other gate that was (its reason)."""
    out = []
    for v in verdicts:
        if v.exercised is False and v.gate.endswith(".exercised"):
            others = sum(1 for o in verdicts if o.suite == v.suite and o.exercised is False) - 1
            reason = v.reason.removeprefix("NOT EXERCISED: ")
            out.append(f"{v.suite} ({others} more gates of it): {reason}")
        elif v.exercised is False and not any(
            o.suite == v.suite and o.gate.endswith(".exercised") for o in verdicts
        ):  # a gate that is its own proof (speculative.acceptance_length: zero drafts)
            out.append(f"{v.gate}: {v.reason.removeprefix('NOT EXERCISED: ')}")
    return out
