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

The sets one round considers (the parts, then the complements, at one
granularity) do not depend on each other's outcomes; only the choice among them
does (the first failing one, in order). So with `width` lives at once (a Ray
cluster, qgate/cluster/) `search_rounds` tests a round's sets `width` at a time,
in their order, and ends the round after the first batch that holds a failure:
the same choice as one at a time, in fewer waves. What that costs: the sets of
that batch after the failing one are tested although the one-at-a-time search
would not have asked for them. The budget counts every test started; a batch
takes only the lives left, and the search stops, as one at a time, at the first
set beyond them once the sets before it are settled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Key", "Outcome", "Search", "search", "search_rounds", "worst_case"]

Outcome = Literal["PASS", "FAIL", "ERROR"]
"""A test's result: FAIL is what the search looks for; PASS and ERROR do not fail."""

Key = tuple[str, ...]
"""A set of changes, in the order of the names."""


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


def search(names: Sequence[str], test: Callable[[Key], Outcome], budget: int) -> Search:
    """ddmin over `names` (which fail together), at most `budget` tests.

    The current set is split into n parts (n = 2 first): a failing part
    replaces it (n back to 2), else a failing complement (n one less), else n
    doubles, until n is the size of the set and nothing smaller fails.
    """
    return search_rounds(names, lambda keys: [test(k) for k in keys], budget, width=1)


def search_rounds(
    names: Sequence[str],
    test_many: Callable[[list[Key]], list[Outcome]],
    budget: int,
    width: int,
) -> Search:
    """`search` testing up to `width` sets of one round at once: `test_many` gets each
    batch in order and returns their outcomes in that order. Width 1 is `search`."""
    if width < 1:
        raise ValueError(f"width must be at least 1, not {width}")
    tried: dict[Key, Outcome] = {}

    def first_failing(candidates: Sequence[Sequence[str]]) -> int | None:
        """The index of the first failing candidate, testing them `width` at a time."""
        keys = [tuple(n for n in names if n in c) for c in candidates]
        seen: list[int] = []  # visited since the last batch was settled
        batch: list[Key] = []

        def settle() -> int | None:
            if batch:
                outcomes = test_many(list(batch))
                if len(outcomes) != len(batch):
                    raise ValueError("test_many must return one outcome per set")
                tried.update(zip(batch, outcomes, strict=True))
                batch.clear()
            hit = next((i for i in seen if tried.get(keys[i]) == "FAIL"), None)
            seen.clear()
            return hit

        for i, key in enumerate(keys):
            if key not in tried and key not in batch and len(tried) + len(batch) >= budget:
                # whether this set is reached at all depends on the batch before it
                if batch and (hit := settle()) is not None:
                    return hit
                raise _Spent(key)
            seen.append(i)
            if key in tried:
                if tried[key] == "FAIL":
                    return settle()
                continue
            if key not in batch:
                batch.append(key)
            if len(batch) >= width and (hit := settle()) is not None:
                return hit
        return settle()

    current = list(names)

    def found(complete: bool, next_set: Key | None = None) -> Search:
        failing = tuple(current) if len(current) < len(names) else None
        return Search(failing, complete, len(tried), next_set)

    n = 2
    try:
        while len(current) >= 2:
            size = -(-len(current) // n)
            parts = [current[i : i + size] for i in range(0, len(current), size)]
            rests = [c for p in parts if len(c := [x for x in current if x not in p])]
            hit = first_failing(parts + rests)
            if hit is not None and hit < len(parts):
                current, n = parts[hit], 2
                continue
            if hit is not None:
                current, n = rests[hit - len(parts)], max(n - 1, 2)
                continue
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    except _Spent as spent:
        return found(False, spent.key)
    return found(True)
