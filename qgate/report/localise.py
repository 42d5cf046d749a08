"""Where the damage sits: divergence by position in the continuation, accuracy by prompt length
and by difficulty.

A collapse that shows only late in a generation, or only past some context length or
needle depth, points at the KV cache; one that shows everywhere points at the weights.
Lower precision shows first on the hardest items (many steps, long carry chains), so the
math suites are also split by ladder level (or core-set tier), both sides, with flips.
Pure functions of a `Report` for its views: verify never reads them, and the gate
verdicts stay as stored (`worst_notes` only names where a failed gate's damage is).
Which suites have which tables and notes is declared on their registry entries
(`SuiteEntry.localise` names one of the `Localiser`s below), not by their names here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import cast

from qgate.core.registry import load_object
from qgate.core.verdict import Verdict
from qgate.profile.suites import entry_of_result
from qgate.quality.calibrate import boundary_warning
from qgate.quality.data_ladder import level_of
from qgate.quality.divergence import reverse_klds
from qgate.quality.records import DivergenceRun, SuiteRun
from qgate.report.derive import percentile, suite_pairs
from qgate.report.model import Report

__all__ = [
    "BUCKETS",
    "DIVERGENCE",
    "MATH",
    "RECALL",
    "AccuracyGroup",
    "Localiser",
    "boundary_lines",
    "PositionBucket",
    "bucket_bounds",
    "length_groups",
    "level_groups",
    "position_buckets",
    "worst_note",
    "worst_notes",
]

BUCKETS = 4
"""Equal parts of the requested continuation that the positions are pooled into."""

# recall item ids end in '.d<depth index>-<depth percent>' (qgate/quality/recall_suite.py)
_DEPTH = re.compile(r"\.d(\d+)-(\d+)$")


@dataclass(frozen=True)
class Localiser:
    """What the localisation shows of one suite's results (named by its `SuiteEntry`)."""

    worst: Callable[[Report, Verdict], str | None]
    """Where a failed gate of its damage sits ('worst: depth 75%, ...'), or None."""
    difficulty: Callable[[str], tuple[int, str] | None] | None = None
    """(sort key, label) of an item's difficulty; None: no accuracy-by-length or difficulty
    rows (no prompt-length axis)."""
    depths: bool = False
    """Its items carry a needle depth (ids ending '.d<i>-<percent>'): rows per depth."""


def _localiser(suite: str) -> Localiser | None:
    entry = entry_of_result(suite)
    if entry is None or entry.localise is None:
        return None
    return cast("Localiser", load_object(entry.localise))


def _by_length(suite: str) -> Localiser | None:
    found = _localiser(suite)
    return found if found is not None and found.difficulty is not None else None


@dataclass(frozen=True)
class PositionBucket:
    """Scored positions lo..hi (0-based, inclusive) of every sequence, pooled."""

    lo: int
    hi: int
    n: int
    mean_kld: float | None
    p99_kld: float | None
    max_kld: float | None
    top1_agreement: float | None

    @property
    def span(self) -> str:
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"

    @property
    def label(self) -> str:
        return f"position{'s' if self.lo != self.hi else ''} {self.span}"


@dataclass(frozen=True)
class AccuracyGroup:
    """Paired items of one suite, or of one needle depth of a recall suite."""

    suite: str
    depth_pct: int | None
    n: int
    reference: float | None
    candidate: float | None
    lost: int
    gained: int
    level: str | None = None  # 'level 7' (ladder) or 'tier word' (core set)

    @property
    def label(self) -> str:
        if self.level is not None:
            return f"{self.suite} {self.level}"
        return self.suite if self.depth_pct is None else f"{self.suite} depth {self.depth_pct}%"


def bucket_bounds(tokens: int, buckets: int = BUCKETS) -> list[tuple[int, int]]:
    """(lo, hi) of `buckets` equal parts of positions 0..tokens-1; empty parts are dropped."""
    cuts = [k * tokens // buckets for k in range(buckets + 1)]
    return [(a, b - 1) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def position_buckets(
    div: DivergenceRun | None,
    kld: Sequence[Sequence[float]] | None = None,
    buckets: int = BUCKETS,
) -> list[PositionBucket]:
    """Divergence per part of the requested continuation (`div.tokens`), pooled over sequences.

    `kld` replaces the stored forward KL per sequence (e.g. the reverse direction). A
    sequence that ended early adds nothing to the later parts; positions past the
    requested length, if any, count in the last part.
    """
    if div is None:
        return []
    values = [list(v) for v in kld] if kld is not None else [list(s.kld) for s in div.sequences]
    longest = max((len(v) for v in values), default=0)
    if longest == 0:
        return []
    bounds = bucket_bounds(max(div.tokens, 1), buckets)
    bounds[-1] = (bounds[-1][0], max(bounds[-1][1], longest - 1))
    out = []
    for lo, hi in bounds:
        part = sorted(k for v in values for k in v[lo : hi + 1])
        agree = [a for s in div.sequences for a in s.top1_agree[lo : hi + 1]]
        out.append(
            PositionBucket(
                lo=lo,
                hi=hi,
                n=len(part),
                mean_kld=sum(part) / len(part) if part else None,
                p99_kld=percentile(part, 99) if part else None,
                max_kld=part[-1] if part else None,
                top1_agreement=sum(agree) / len(agree) if agree else None,
            )
        )
    return out


def _group(suite: str, depth: int | None, pairs: list[tuple[bool, bool]]) -> AccuracyGroup:
    n = len(pairs)
    return AccuracyGroup(
        suite=suite,
        depth_pct=depth,
        n=n,
        reference=sum(r for r, _ in pairs) / n if n else None,
        candidate=sum(c for _, c in pairs) / n if n else None,
        lost=sum(1 for r, c in pairs if r and not c),
        gained=sum(1 for r, c in pairs if c and not r),
    )


def _depth_groups(
    suite: str, ref: SuiteRun, paired: dict[str, tuple[bool, bool]]
) -> list[AccuracyGroup]:
    by_depth: dict[tuple[int, int], list[tuple[bool, bool]]] = {}
    for item in ref.items:
        found = _DEPTH.search(item.id)
        if found and item.id in paired:
            key = (int(found.group(1)), int(found.group(2)))
            by_depth.setdefault(key, []).append(paired[item.id])
    return [_group(suite, pct, by_depth[(i, pct)]) for i, pct in sorted(by_depth)]


def length_groups(report: Report) -> list[AccuracyGroup]:
    """Math short and long, each recall context length and, under it, each needle depth.

    Items are paired by id (reference accuracy over the paired items, as the gates
    count); other exact-answer suites (lm_eval) have no prompt-length axis here.
    """
    out: list[AccuracyGroup] = []
    for suite, ref, cand in suite_pairs(report.quality.runs):
        localiser = _by_length(suite)
        if ref is None or cand is None or localiser is None:
            continue
        cand_by_id = {i.id: i.correct for i in cand.items}
        paired = {i.id: (i.correct, cand_by_id[i.id]) for i in ref.items if i.id in cand_by_id}
        out.append(_group(suite, None, list(paired.values())))
        if localiser.depths:
            out += _depth_groups(suite, ref, paired)
    return out


_TIERS = ("arith", "multi", "word")  # the core set's tiers, easiest first


_SIMILAR = re.compile(r"^recall\.\d+\.s(\d+)\.")


def _similar_codes(item_id: str) -> tuple[int, str]:
    """A recall item's difficulty: its haystack's count of similar distractor codes."""
    found = _SIMILAR.match(item_id)
    k = int(found.group(1)) if found else 0
    return k, f"{k} similar codes"


def _math_difficulty(item_id: str) -> tuple[int, str] | None:
    """A math item's difficulty: its ladder level, or its core-set tier."""
    level = level_of(item_id)
    if level is not None:
        return level, f"level {level}"
    tier = item_id.split("-")[-2] if item_id.count("-") >= 1 else ""
    if tier in _TIERS:
        return -len(_TIERS) + _TIERS.index(tier), f"tier {tier}"
    return None


def level_groups(report: Report) -> list[AccuracyGroup]:
    """Per math or recall suite, its paired items by difficulty, easiest first: ladder level or
    core tier (math), similar distractor codes (recall).

    A suite whose items all sit at one difficulty gets no rows (its total is in
    `length_groups`).
    """
    out: list[AccuracyGroup] = []
    for suite, ref, cand in suite_pairs(report.quality.runs):
        localiser = _by_length(suite)
        if ref is None or cand is None or localiser is None or localiser.difficulty is None:
            continue
        cand_by_id = {i.id: i.correct for i in cand.items}
        by_level: dict[tuple[int, str], list[tuple[bool, bool]]] = {}
        for item in ref.items:
            key = localiser.difficulty(item.id)
            if key is not None and item.id in cand_by_id:
                by_level.setdefault(key, []).append((item.correct, cand_by_id[item.id]))
        if len(by_level) > 1:
            out += [
                replace(_group(suite, None, by_level[key]), level=key[1])
                for key in sorted(by_level)
            ]
    return out


def _math_note(report: Report, verdict: Verdict) -> str | None:
    suite = verdict.suite
    levels = [g for g in level_groups(report) if g.suite == suite]
    if not levels:
        return None
    worst = max(levels, key=lambda g: (g.lost - g.gained, g.lost))
    return (
        f"worst: {worst.level}, {worst.lost} of {worst.n} lost, {worst.gained} gained "
        f"(candidate {100 * (worst.candidate or 0):.1f}%, "
        f"reference {100 * (worst.reference or 0):.1f}%)"
    )


def boundary_lines(report: Report) -> list[str]:
    """The ceiling/floor warning of every gated exact-answer suite whose reference is there.

    The smallest detectable drop is the one its verdicts state (at the observed
    discordance); the reference's accuracy is over its items, as the gates count.
    """
    out: list[str] = []
    for suite, ref, _ in suite_pairs(report.quality.runs):
        gated = [v for v in report.quality.verdicts if v.suite == suite]
        if ref is None or not ref.items or not gated:
            continue
        accuracy = sum(i.correct for i in ref.items) / len(ref.items)
        stated = [v for v in gated if v.power is not None or v.min_detectable_drop is not None]
        mdd = stated[0].min_detectable_drop if stated else None
        warning = boundary_warning(suite, accuracy, mdd)
        if warning is not None:
            out.append(warning)
    return out


def _times_first(value: float, first: float, worst_is_first: bool, last: float | None) -> str:
    if worst_is_first:
        return f"the first bucket; the last {last:.3g}" if last is not None else "the first bucket"
    if first <= 0:
        return f"the first bucket {first:.3g}"
    ratio = value / first
    return f"{ratio:.0f}x the first bucket" if ratio >= 10 else f"{ratio:.2g}x the first bucket"


def _divergence_note(report: Report, verdict: Verdict) -> str | None:
    prefix = f"{verdict.suite}."
    if not verdict.gate.startswith(prefix):
        return None
    gate = verdict.gate.removeprefix(prefix)
    div = report.quality.divergence
    kld = None
    if gate == "max_mean_reverse_kld" and div is not None:
        kld = reverse_klds(div)
        if kld is None:
            return None
    buckets = [b for b in position_buckets(div, kld) if b.n]
    if not buckets:
        return None
    if gate == "min_top1_agreement":
        worst = min(buckets, key=lambda b: (b.top1_agreement or 0.0, -b.lo))
        first = buckets[0].top1_agreement or 0.0
        return (
            f"worst: {worst.label}, top-1 agreement {100 * (worst.top1_agreement or 0):.1f}% "
            f"(first bucket {100 * first:.1f}%)"
        )
    what, key = {
        "max_p99_kld": ("p99 KL", "p99_kld"),
        "max_max_kld": ("max KL", "max_kld"),
        "max_mean_reverse_kld": ("mean KL(cand||ref)", "mean_kld"),
    }.get(gate, ("mean KL", "mean_kld"))
    value_of = [float(getattr(b, key)) for b in buckets]
    i = max(range(len(buckets)), key=lambda j: (value_of[j], j))
    last = value_of[-1] if len(buckets) > 1 else None
    ratio = _times_first(value_of[i], value_of[0], i == 0, last)
    return f"worst: {buckets[i].label}, {what} {value_of[i]:.3g} ({ratio})"


def _recall_note(report: Report, verdict: Verdict) -> str | None:
    suite = verdict.suite
    depths = [g for g in length_groups(report) if g.suite == suite and g.depth_pct is not None]
    if not depths:
        return None
    worst = max(depths, key=lambda g: (g.lost, -(g.candidate or 0.0)))
    return (
        f"worst: depth {worst.depth_pct}%, {worst.lost} of {worst.n} lost "
        f"(candidate {100 * (worst.candidate or 0):.1f}%, "
        f"reference {100 * (worst.reference or 0):.1f}%)"
    )


def worst_note(report: Report, verdict: Verdict) -> str | None:
    """Where a failed divergence, recall or math gate's damage sits ('worst: positions 24-31,
    ...', 'worst: level 8, ...'); None for a gate that passed or is not settled, that has no
    observed value, or that has no position, depth or difficulty axis (lm_eval, perf)."""
    if verdict.passed or not verdict.settled or verdict.observed is None:
        return None
    localiser = _localiser(verdict.suite)
    return None if localiser is None else localiser.worst(report, verdict)


def worst_notes(report: Report) -> dict[str, str]:
    """`worst_note` of every gate that has one, by gate id."""
    notes = ((v.gate, worst_note(report, v)) for v in report.all_verdicts())
    return {gate: note for gate, note in notes if note is not None}


MATH = Localiser(worst=_math_note, difficulty=_math_difficulty)
"""Math: accuracy by prompt form and by ladder level or core tier; a failed gate's worst level."""
RECALL = Localiser(worst=_recall_note, difficulty=_similar_codes, depths=True)
"""Recall: accuracy by context length, needle depth and similar codes; the worst depth."""
DIVERGENCE = Localiser(worst=_divergence_note)
"""Divergence: a failed gate's worst part of the continuation."""
