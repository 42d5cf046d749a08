"""The overall verdict and the perf status: one place, used by `run` and `verify`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from qgate.core.verdict import Verdict
from qgate.report.model import OverallVerdict, PerfStatus


def perf_status(
    quality_verdicts: Sequence[Verdict], skip_perf: bool, force_perf: bool
) -> PerfStatus:
    """What the perf stage does given the quality gates and the CLI flags: it runs only when
    every gate passed; a gate failed outright skips it, else an INCONCLUSIVE one does."""
    if skip_perf:
        return "skipped: --skip-perf"
    if all(v.passed for v in quality_verdicts):
        return "ran"
    if force_perf:
        return "ungated"
    if any(not v.passed and not v.inconclusive for v in quality_verdicts):
        return "skipped: gates failed"
    return "skipped: gates inconclusive"


def overall(
    verdicts: Iterable[Verdict], perf_status: PerfStatus, preview: bool = False
) -> OverallVerdict:
    """FAIL if any gate failed outright; INCONCLUSIVE if none did but a non-inferiority gate
    showed neither (issue 53); UNGATED if perf was forced past gates that did not pass; else
    PASS.

    A forced perf run is only possible after a failed gate, and its numbers
    were never earned, so UNGATED wins over FAIL: the report must not be read
    as a normal gated FAIL with valid perf figures either.

    A preview (dummy weights, no quality suites) is never PASS: nothing showed
    the candidate answers correctly. It is PREVIEW (exit 0) when its perf
    gates hold and FAIL (exit 1) when one does not, since speed gates are valid
    on random weights.
    """
    if perf_status == "ungated":
        return "UNGATED"
    verdicts = list(verdicts)
    if any(not v.passed and not v.inconclusive for v in verdicts):
        return "FAIL"
    if any(not v.passed for v in verdicts):
        return "INCONCLUSIVE"
    return "PREVIEW" if preview else "PASS"


PREVIEW_NOTE = "dummy weights: speed only"


def verdict_label(verdict: str) -> str:
    """The verdict as people read it: a PREVIEW says it measured speed on random weights."""
    return f"{verdict} ({PREVIEW_NOTE})" if verdict == "PREVIEW" else verdict
