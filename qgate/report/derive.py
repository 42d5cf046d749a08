"""Figures derived from a report's raw records, shared by its views and its signed tables.

Pure functions of a `Report`: suite pairs, accuracies, flipped items, KL values,
accuracy deltas. The multi report's table (multi_table.py) is signed and
re-derived by `qgate verify` with these; the views (render/) show them.
"""

from __future__ import annotations

from collections.abc import Iterable

from qgate.quality.records import SuiteRun
from qgate.report.model import Report

__all__ = ["accuracy", "accuracy_deltas", "flips", "kld_values", "mean_kld", "suite_pairs"]


def suite_pairs(runs: Iterable[SuiteRun]) -> list[tuple[str, SuiteRun | None, SuiteRun | None]]:
    """(suite, reference run, candidate run) in first-seen order."""
    order: list[str] = []
    pairs: dict[str, dict[str, SuiteRun]] = {}
    for run in runs:
        if run.suite not in pairs:
            order.append(run.suite)
            pairs[run.suite] = {}
        pairs[run.suite][run.role] = run
    return [(s, pairs[s].get("reference"), pairs[s].get("candidate")) for s in order]


def accuracy(run: SuiteRun | None) -> tuple[int, int]:
    """(correct, total) of a suite run."""
    if run is None:
        return (0, 0)
    return (sum(1 for i in run.items if i.correct), len(run.items))


def flips(ref: SuiteRun, cand: SuiteRun) -> tuple[list[str], list[str]]:
    """Item ids lost (reference right, candidate wrong) and gained (the reverse)."""
    cand_by_id = {i.id: i.correct for i in cand.items}
    lost = [i.id for i in ref.items if i.correct and cand_by_id.get(i.id) is False]
    gained = [i.id for i in ref.items if not i.correct and cand_by_id.get(i.id) is True]
    return lost, gained


def kld_values(report: Report) -> list[float]:
    """Every position's KL(reference || candidate), sorted."""
    div = report.quality.divergence
    return sorted(k for s in div.sequences for k in s.kld) if div else []


def accuracy_deltas(report: Report) -> dict[str, float]:
    """Candidate minus reference accuracy per suite."""
    out: dict[str, float] = {}
    for suite, ref, cand in suite_pairs(report.quality.runs):
        (rc, rn), (cc, cn) = accuracy(ref), accuracy(cand)
        if rn and cn:
            out[suite] = cc / cn - rc / rn
    return out


def mean_kld(report: Report) -> float | None:
    vals = kld_values(report)
    return sum(vals) / len(vals) if vals else None
