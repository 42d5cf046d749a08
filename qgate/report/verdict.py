"""How a verdict reads: the overall verdict and the perf status are the judge's
(gates/judge.py `overall`, `perf_status`: one place, used by `run` and `verify`)."""

from __future__ import annotations

from qgate.gates.judge import overall, perf_status

__all__ = ["PREVIEW_NOTE", "overall", "perf_status", "verdict_label"]


PREVIEW_NOTE = "dummy weights: speed only"


def verdict_label(verdict: str) -> str:
    """The verdict as people read it: a PREVIEW says it measured speed on random weights."""
    return f"{verdict} ({PREVIEW_NOTE})" if verdict == "PREVIEW" else verdict
