"""The outcome of one gate, quality or perf: observed, limit, passed, and why.

Gates are pure functions that return these (qgate/quality/gates.py,
qgate/perf/gates.py); run and verify compare them field by field.
"""

from __future__ import annotations

from pydantic import Field

from qgate.core.records import Record

__all__ = ["Verdict"]


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
