"""Delta debugging (Zeller's ddmin) over named changes, with a budget of tests.

Generic and pure given its test: `qgate run --attribute` tests sub-candidates
(qgate/run/attribute.py), and `qgate verify` replays the search on the outcomes
a report records to check that its trials and its conclusion follow.

The whole set is known to fail (the candidate did) and the empty set to pass
(the reference did), so neither is tested. Halving comes first: a change that
fails alone is found in about 2 log2(n) tests, where trying every change alone
spent n and left nothing for a pair that fails only together. The search ends
when every set with one change fewer than its answer has passed (1-minimal),
or when the next test would exceed the budget: then it stops where it is and
says so. An untested set is never taken as passing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Outcome", "Search", "search", "worst_case"]

Outcome = Literal["PASS", "FAIL", "ERROR"]
"""A test's result: FAIL is what the search looks for; PASS and ERROR do not fail."""


@dataclass(frozen=True)
class Search:
    """Where the search ended."""

    failing: tuple[str, ...] | None
    """The smallest failing set found; None: no proper subset failed (only all together)."""
    complete: bool
    """The search ran to its end: every set with one change fewer than `failing` (or than
    all of the changes, when None) was tested and passed. False: the budget ran out first."""
    tests: int
    """Tests made (each a set not tested before)."""
    next_set: tuple[str, ...] | None
    """The set it would have tested next when the budget ran out."""


class _Spent(Exception):
    def __init__(self, key: tuple[str, ...]) -> None:
        self.key = key


_WORST = (0, 0, 2, 6, 12, 21, 29, 37, 48)
"""The most tests `search` makes over n changes, n = 0..8: the maximum over every possible
sequence of outcomes (enumerated; tests/unit/core/test_ddmin.py re-enumerates n <= 6)."""


def worst_case(changes: int) -> int:
    """Tests ddmin may need over `changes` changes to show its answer 1-minimal.

    Exact up to 8 changes (every possible run enumerated); beyond, Zeller and
    Hildebrandt's (2002) bound of (n^2 + 7n) / 2 tests, which holds here too:
    no set is tested twice and the whole set is not tested.
    """
    if changes < len(_WORST):
        return _WORST[max(changes, 0)]
    return (changes * changes + 7 * changes) // 2


def search(names: Sequence[str], test: Callable[[tuple[str, ...]], Outcome], budget: int) -> Search:
    """ddmin over `names` (which fail together), at most `budget` tests.

    The current set is split into n parts (n = 2 first): a failing part
    replaces it (n back to 2), else a failing complement (n one less), else n
    doubles, until n is the size of the set and nothing smaller fails.
    """
    tried: dict[tuple[str, ...], Outcome] = {}

    def fails(subset: Sequence[str]) -> bool:
        key = tuple(n for n in names if n in subset)
        if key not in tried:
            if len(tried) >= budget:
                raise _Spent(key)
            tried[key] = test(key)
        return tried[key] == "FAIL"

    current = list(names)

    def found(complete: bool, next_set: tuple[str, ...] | None = None) -> Search:
        failing = tuple(current) if len(current) < len(names) else None
        return Search(failing, complete, len(tried), next_set)

    n = 2
    try:
        while len(current) >= 2:
            size = -(-len(current) // n)
            parts = [current[i : i + size] for i in range(0, len(current), size)]
            part = next((p for p in parts if fails(p)), None)
            if part is not None:
                current, n = part, 2
                continue
            rest = next(
                (c for p in parts if len(c := [x for x in current if x not in p]) and fails(c)),
                None,
            )
            if rest is not None:
                current, n = rest, max(n - 1, 2)
                continue
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    except _Spent as spent:
        return found(False, spent.key)
    return found(True)
