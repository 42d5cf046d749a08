"""Delta debugging (Zeller's ddmin) over named changes, with a budget of tests.

Generic and pure given its test: `qgate run --attribute` tests sub-candidates
(qgate/run/attribute.py), and `qgate verify` replays the search on the outcomes
a report records to check that its trials and its conclusion follow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

__all__ = ["Outcome", "search"]

Outcome = Literal["PASS", "FAIL", "ERROR"]
"""A test's result: FAIL is what the search looks for; PASS and ERROR do not fail."""


def search(
    names: Sequence[str], test: Callable[[tuple[str, ...]], Outcome], budget: int
) -> tuple[tuple[str, ...] | None, list[str]]:
    """ddmin over `names` (which fail together): (smallest failing set found, not tried).

    Each name alone first (one change alone that fails is the answer), then halving:
    a failing part or complement replaces the set, else the granularity doubles. The
    test of a set already tried is not repeated; past `budget` tests the search stops
    and returns what it has (the set so far, or None) with what it did not try.
    """
    tried: dict[tuple[str, ...], Outcome] = {}
    skipped: list[str] = []

    def fails(subset: Sequence[str]) -> bool:
        key = tuple(n for n in names if n in subset)
        if key not in tried:
            if len(tried) >= budget:
                skipped.append(" + ".join(key))
                return False
            tried[key] = test(key)
        return tried[key] == "FAIL"

    singles = [n for n in names if fails([n])]
    if singles:
        return (singles[0],), skipped
    current = list(names)
    if len(current) < 2:
        return None, skipped
    n = 2
    while len(current) >= 2:
        size = -(-len(current) // n)
        parts = [current[i : i + size] for i in range(0, len(current), size)]
        found = next((p for p in parts if len(p) < len(current) and fails(p)), None)
        if found is not None:
            current, n = found, 2
            continue
        rest = next(
            (
                c
                for p in parts
                if len(c := [x for x in current if x not in p]) > 0
                and len(c) < len(current)
                and fails(c)
            ),
            None,
        )
        if rest is not None:
            current, n = rest, max(n - 1, 2)
            continue
        if n >= len(current):
            break
        n = min(len(current), 2 * n)
    return (tuple(current) if len(current) < len(names) else None), skipped
