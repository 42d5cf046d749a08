"""Figures derived from a report's raw records, shared by its views and its signed tables.

Pure functions of a `Report`: suite pairs, accuracies, flipped items, KL values and
their percentiles, accuracy deltas. The multi report's table (multi_table.py) is signed
and re-derived by `qgate verify` with these; the views (render/) show them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from qgate.core.serving import ServerStart
from qgate.quality.divergence import reverse_klds
from qgate.quality.records import SuiteRun
from qgate.report.model import Report

__all__ = [
    "accuracy",
    "accuracy_deltas",
    "flips",
    "kld_both_ways",
    "kld_values",
    "mean_kld",
    "percentile",
    "suite_pairs",
    "time_breakdown",
]


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


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default) of sorted values; q in [0, 100]."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def mean_kld(report: Report) -> float | None:
    vals = kld_values(report)
    return sum(vals) / len(vals) if vals else None


def _mean_se(per_sequence: list[list[float]]) -> tuple[float, float | None, int]:
    """Mean over every position and its standard error over sequences (positions within one
    sequence are not independent: the sequence means are the sample)."""
    values = [v for seq in per_sequence for v in seq]
    means = [sum(seq) / len(seq) for seq in per_sequence if seq]
    mean = sum(values) / len(values)
    if len(means) < 2:
        return mean, None, len(means)
    m = sum(means) / len(means)
    sd = math.sqrt(sum((x - m) ** 2 for x in means) / (len(means) - 1))
    return mean, sd / math.sqrt(len(means)), len(means)


def kld_both_ways(report: Report) -> dict[str, tuple[float, float | None, int]]:
    """`forward` KL(reference || candidate) and, where the report stores both sides' top-k
    logprobs (schema 2), `reverse` KL(candidate || reference): (mean, SE over sequences, n)."""
    div = report.quality.divergence
    if div is None or not any(s.kld for s in div.sequences):
        return {}
    out = {"forward": _mean_se([list(s.kld) for s in div.sequences if s.kld])}
    reverse = reverse_klds(div)
    if reverse is not None:
        out["reverse"] = _mean_se([r for r in reverse if r])
    return out


def time_breakdown(report: Report) -> list[tuple[str, float]]:
    """Where the run's wall time went: start-ups, each suite, each side's perf, the rest.

    Start-ups are the recorded starts' times to ready; a suite's time is its wall
    time (cached reference suites cost nothing in this run); perf is each side's
    measured windows. The rest (load, weight emulation, preflight, warm-ups, waiting
    for a neighbour, the report) is the stages' total minus those, never negative.
    """
    if report.plan is not None and report.plan.mode == "together":
        return _side_by_side_breakdown(report)
    rows: list[tuple[str, float]] = []
    starts = [s for s in report.starts if s.ready_s is not None]
    if starts:
        sides = ", ".join(
            f"{s.side}{' preflight' if s.purpose == 'preflight' else ''}{label} {s.ready_s:.0f} s"
            for s, label in zip(starts, _round_labels(report, starts), strict=True)
        )
        rows.append(
            (f"start-up: {len(starts)} start(s) ({sides})", sum(s.ready_s or 0.0 for s in starts))
        )
    for run in report.quality.runs:
        if not run.cached:
            rows.append((f"quality {run.role} {run.suite}", run.wall_s))
    if report.quality.divergence is not None and report.quality.divergence.wall_s:
        rows.append(("quality divergence (both sides)", report.quality.divergence.wall_s))
    for role in ("reference", "candidate"):
        windows = [r.duration_ns for r in report.perf.runs if r.role == role]
        if windows:
            rows.append((f"perf {role} (measured windows)", sum(windows) / 1e9))
    rows += _attribution_rows(report)
    total = sum(report.stage_timings.values())
    if total:
        rows.append(
            (
                "other: load, emulation, preflight, warm-ups, report",
                max(0.0, total - sum(v for _, v in rows)),
            )
        )
        rows.append(("total", total))
    return [(what, round(seconds, 1)) for what, seconds in rows]


def _round_labels(report: Report, starts: Sequence[ServerStart]) -> list[str]:
    """' (round N)' for a side's N-th life when the perf ran in rounds (perf.rounds), else ''."""
    if len({r.round for r in report.perf.runs}) < 2:
        return [""] * len(starts)
    seen: dict[str, int] = {}
    out = []
    for s in starts:
        n = seen.get(s.side, 0) if s.purpose == "life" else 0
        seen[s.side] = n + (s.purpose == "life")
        out.append(f" (round {n + 1})" if n else "")
    return out


def _attribution_rows(report: Report) -> list[tuple[str, float]]:
    """The attribution stage: its sub-candidate lives, one after the other."""
    seconds = sum(v for k, v in report.stage_timings.items() if k.startswith("attribution"))
    att = report.attribution
    if not seconds or att is None:
        return []
    each = ", ".join(f"{' + '.join(t.changes)} {t.seconds:.0f} s" for t in att.trials)
    return [(f"attribution: {att.lives} sub-candidate lives ({each})", seconds)]


def _side_by_side_breakdown(report: Report) -> list[tuple[str, float]]:
    """The stages of a side-by-side run (they overlap the two sides), each side's parts inside."""
    timings = report.stage_timings
    rows: list[tuple[str, float]] = []
    ready = [s for s in report.starts if s.ready_s is not None]
    starts = ", ".join(
        f"{s.side}{label} {s.ready_s:.0f} s"
        for s, label in zip(ready, _round_labels(report, ready), strict=True)
    )
    if "startup" in timings:
        target = report.profile.get("target") or {}
        how = (
            "both at once"
            if str(target.get("accelerator", "cpu")).lower() == "cpu"
            else "the candidate once the reference was ready"
        )
        rows.append((f"start-up, {how} ({starts})", timings["startup"]))
    if "quality" in timings:
        sides = "; ".join(
            f"{role}: "
            + ", ".join(
                f"{r.suite} {r.wall_s:.0f} s"
                for r in report.quality.runs
                if r.role == role and not r.cached
            )
            for role in ("reference", "candidate")
        )
        rows.append((f"quality, both at once ({sides})", timings["quality"]))
    if "perf" in timings:
        blocks = report.plan.blocks if report.plan else 1
        rows.append((f"perf, {blocks} interleaved block(s) per side", timings["perf"]))
    if "perf_rounds" in timings:  # perf.rounds: both sides again in fresh lives
        rounds = len({r.round for r in report.perf.runs})
        later = "round 2" if rounds == 2 else f"rounds 2-{rounds}"
        rows.append((f"perf {later}, both sides in fresh lives", timings["perf_rounds"]))
    rows += _attribution_rows(report)
    total = sum(timings.values())
    if total:
        rows.append(("other: load, report", max(0.0, total - sum(v for _, v in rows))))
        rows.append(("total", total))
    return [(what, round(seconds, 1)) for what, seconds in rows]
