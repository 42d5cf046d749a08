"""`qgate verify` on the reuse passes (quality.reuse): their answers, pairing and counters.

The pass verdicts themselves (exercised shares from the recorded counters, paired gates,
cold/pass flips) are recomputed with every other quality verdict (recompute.py calls
`evaluate_reuse`). Here: each pass item's answer and correctness re-derived from its stored
response, and its expected answer equal to that of the same item in the side's cold run
(which check_questions pins to the reference's and the math set's); and the counters checked
for their own arithmetic (`check_counters`): a total equal to the sum of its sources, no
counter going backwards from one scrape of a side to its next, both sides counting alike for
the same items, the items' own usage inside its window. What the server counted beyond that
rests on the signature (record_kinds.RAW).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from qgate.errors import VerificationFailed
from qgate.profile import Profile
from qgate.quality.reuse_records import (
    COMPUTED,
    DEVICE,
    EXTERNAL,
    PREEMPTIONS,
    PassRun,
    PassSuite,
    shares,
)
from qgate.report.model import Report
from qgate.report.verify.rederive import Rederived, rederive_correctness

__all__ = ["check_counters", "check_passes"]

TOTAL = "vllm:prompt_tokens_total"
MONOTONE = (TOTAL, COMPUTED, DEVICE, EXTERNAL, PREEMPTIONS)
SIDES_APART = 1.25
"""How many times more prompt tokens one side may count than the other for the same items
before verify calls it a broken counter (the same model and prompts give equal counts)."""


def check_passes(report: Report, profile: Profile, done: Rederived) -> int:
    """Re-derive every pass item; return how many there were."""
    runs = [s.run for p in report.quality.passes for s in p.suites if s.run is not None]
    before = done.items
    rederive_correctness(runs, profile, done)
    check_counters(report)
    cold = {(r.suite, r.role, i.id): i for r in report.quality.runs for i in r.items}
    for run in runs:
        for item in run.items:
            was = cold.get((run.suite, run.role, item.id))
            if was is not None and was.expected != item.expected:
                raise VerificationFailed(
                    f"{run.suite} {run.role} pass item {item.id}: expected {item.expected!r} "
                    f"but the cold run expected {was.expected!r}"
                )
    return done.items - before


def _fail(message: str) -> VerificationFailed:
    return VerificationFailed(f"quality.passes: {message}")


def _scrapes(p: PassRun, i: int) -> Iterator[tuple[str, dict[str, float]]]:
    """A pass's scrapes in the order they were taken, each with its field path."""
    for j, probe in enumerate(p.probes):
        yield f"passes[{i}].probes[{j}].before", probe.before
        yield f"passes[{i}].probes[{j}].after", probe.after
    for j, s in enumerate(p.suites):
        yield f"passes[{i}].suites[{j}].before", s.before
        yield f"passes[{i}].suites[{j}].after", s.after


def _window(s: PassSuite) -> float | None:
    if TOTAL in s.before and TOTAL in s.after:
        return s.after[TOTAL] - s.before[TOTAL]
    return shares(s.before, s.after, strict=False).prompt_tokens


def check_counters(report: Report) -> int:
    """The recorded counters hold their own arithmetic; returns how many scrapes were checked.
    VerificationFailed names the field and both values."""
    passes = report.quality.passes
    last: dict[str, dict[str, tuple[str, float]]] = {}
    count = 0
    for i, p in enumerate(passes):
        seen = last.setdefault(p.role, {})
        for where, scrape in _scrapes(p, i):
            count += 1
            for key, value in scrape.items():
                if not math.isfinite(value) or value < 0:
                    raise _fail(f"{where}[{key}] = {value!r} is not a count")
            if TOTAL in scrape and all(k in scrape for k in (COMPUTED, DEVICE, EXTERNAL)):
                parts = scrape[COMPUTED] + scrape[DEVICE] + scrape[EXTERNAL]
                if abs(parts - scrape[TOTAL]) > 0.5:
                    raise _fail(
                        f"{where}[{TOTAL}] = {scrape[TOTAL]:,.0f} is not the sum of its sources "
                        f"({parts:,.0f}: computed, device cache, host/external)"
                    )
            for key in MONOTONE:
                if key not in scrape:
                    continue
                prev = seen.get(key)
                if prev is not None and scrape[key] < prev[1]:
                    raise _fail(
                        f"{where}[{key}] = {scrape[key]:,.0f} went backwards from "
                        f"{prev[1]:,.0f} at {prev[0]} ({p.role})"
                    )
                seen[key] = (where, scrape[key])
    _sides_alike(report)
    return count


def _items(report: Report, p: PassRun, s: PassSuite) -> int | None:
    if s.run is not None:
        return len(s.run.items)
    cold = next((r for r in report.quality.runs if (r.suite, r.role) == (s.suite, p.role)), None)
    return None if cold is None else len(cold.items)


def _sides_alike(report: Report) -> None:
    """Both sides count alike for the same items (per item, so a side that stopped early
    compares), and a suite's own usage lies inside its counter window."""
    passes = report.quality.passes
    index = {(p.name, p.role): (i, p) for i, p in enumerate(passes)}
    for (name, role), (i, cand_pass) in index.items():
        if role != "candidate" or (name, "reference") not in index:
            continue
        j, ref_pass = index[(name, "reference")]
        for cand in cand_pass.suites:
            other = next((s for s in ref_pass.suites if s.suite == cand.suite), None)
            if other is None:
                continue
            for at, s in ((i, cand), (j, other)):
                own, window = s.usage.get("prompt_tokens"), _window(s)
                if own is not None and window is not None and own > window + 0.5:
                    raise _fail(
                        f"passes[{at}] {s.suite} usage[prompt_tokens] = {own:,.0f} exceeds the "
                        f"prompt tokens of its counter window ({window:,.0f})"
                    )
            if name == "load":  # each side's window holds its own filler: the items' usage
                field = "usage[prompt_tokens]"
                mine, theirs = cand.usage.get("prompt_tokens"), other.usage.get("prompt_tokens")
            else:
                field = "counter window prompt tokens"
                mine, theirs = _window(cand), _window(other)
            n, m = _items(report, cand_pass, cand), _items(report, ref_pass, other)
            if mine is None or theirs is None or not n or not m:
                continue
            lo, hi = sorted((mine / n, theirs / m))
            if hi > SIDES_APART * lo + 16:
                raise _fail(
                    f"{name} {cand.suite}: {field} candidate {mine:,.0f} for {n} items, "
                    f"reference {theirs:,.0f} for {m}: one side counts far more prompt tokens "
                    "for the same items"
                )
