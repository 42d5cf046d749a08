"""Perf rounds in the views: which speed design ran, and each ratio's across-round figures.

Read from the records (each run's round and block, verified) and the plan's mode; the
figures are the comparisons' (qgate/perf/blocks.py).
"""

from __future__ import annotations

from typing import Any

from qgate.report.model import Report
from qgate.report.render.parts import fmt

__all__ = ["ROUND_HEADER", "round_cells", "speed_design"]

ROUND_HEADER = ["Across rounds (95%)", "Round ratios"]


def speed_design(report: Report) -> str | None:
    """One line: how the speed was measured (lives, rounds, order, blocks); None without perf."""
    runs = report.perf.runs
    if not runs:
        return None
    rounds = len({r.round for r in runs})
    blocks = max(r.block for r in runs) + 1
    together = report.plan is not None and report.plan.mode == "together"
    how = "side by side, blocks interleaved" if together else "in sequence"
    per_life = f"{blocks} block(s) per life"
    if rounds > 1 and report.perf.derivation < 7:  # the interval of perf derivation 6
        return (
            f"Speed design: rounds: {rounds} fresh lives per side, ABBA ({how}, {per_life}); "
            "each ratio's 95% CI covers the noise between requests, between the blocks of a "
            "life and between the rounds' ratios (restart to restart)."
        )
    if rounds > 1:
        return (
            f"Speed design: rounds: {rounds} fresh lives per side, ABBA ({how}, {per_life}); "
            "each round is the unit: a ratio is the mean of its round ratios (log scale) and "
            "its 95% CI Student's t over them, restart to restart (never narrower than the "
            "noise within one life)."
        )
    return (
        f"Speed design: one life per side ({how}, {per_life}); the intervals cover the "
        "noise within those lives, not from one restart to the next (perf.rounds)."
    )


def round_cells(comparison: dict[str, Any]) -> list[str]:
    """The across-round interval and the round ratios of one comparison row ('–' for none)."""
    ratios = comparison.get("round_ratios") or []
    lo, hi = comparison.get("round_ci_low"), comparison.get("round_ci_high")
    interval = f"[{fmt(lo)}, {fmt(hi)}]" if lo is not None and hi is not None else "–"
    return [interval, ", ".join(fmt(r) for r in ratios) or "–"]
