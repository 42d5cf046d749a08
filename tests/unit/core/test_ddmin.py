"""ddmin over named changes within a budget of tests, with stand-in oracles.

Exhaustive over small change counts: every culprit set, every budget. The
search either shows its answer 1-minimal (every set with one change fewer
tested and passing) or says it did not; an untested set never counts as passing.
"""

from __future__ import annotations

import itertools

import pytest

from qgate.core.ddmin import Outcome, Search, search, worst_case


def _oracle(culprits: set[frozenset[str]], calls: list[tuple[str, ...]]):  # type: ignore[no-untyped-def]
    """FAIL when the tested set contains every change of one culprit set."""

    def oracle(key: tuple[str, ...]) -> Outcome:
        calls.append(key)
        return "FAIL" if any(c <= set(key) for c in culprits) else "PASS"

    return oracle


def _names(n: int) -> list[str]:
    return [f"c{i}" for i in range(n)]


def _cases(most: int) -> list[tuple[list[str], frozenset[str]]]:
    return [
        (_names(n), frozenset(s))
        for n in range(1, most + 1)
        for k in range(1, n + 1)
        for s in itertools.combinations(_names(n), k)
    ]


def _shown_minimal(found: Search, names: list[str], outcome: dict[tuple[str, ...], bool]) -> bool:
    """Every set with one change fewer than the answer was tested and did not fail."""
    answer = list(found.failing) if found.failing else names
    smaller = [tuple(x for x in answer if x != drop) for drop in answer]
    return all(key == () or outcome.get(key) is False for key in smaller)


CASES = _cases(7)


def test_every_culprit_set_is_found_and_shown_minimal_without_a_budget() -> None:
    for names, culprit in CASES:
        calls: list[tuple[str, ...]] = []
        found = search(names, _oracle({culprit}, calls), budget=10_000)
        want = None if len(culprit) == len(names) else tuple(n for n in names if n in culprit)
        assert found.complete and found.failing == want and found.next_set is None
        assert len(set(calls)) == len(calls) == found.tests  # no set tested twice
        assert tuple(names) not in calls and () not in calls  # both ends are known
        outcome = {key: bool(culprit <= set(key)) for key in calls}
        assert _shown_minimal(found, names, outcome)
        assert found.tests <= worst_case(len(names))
    assert len(CASES) == 2**8 - 8 - 1  # every nonempty subset of 1..7 changes


@pytest.mark.parametrize("budget", range(0, 13))
def test_within_any_budget_it_shows_minimality_or_says_it_did_not(budget: int) -> None:
    overclaims = 0
    for names, culprit in CASES:
        calls: list[tuple[str, ...]] = []
        found = search(names, _oracle({culprit}, calls), budget)
        assert found.tests == len(calls) <= budget
        outcome = {key: bool(culprit <= set(key)) for key in calls}
        if found.failing is not None:  # only a set tested and failing is ever answered
            assert outcome.get(found.failing) is True
        if found.complete:
            overclaims += not _shown_minimal(found, names, outcome)
            assert found.next_set is None
        else:
            assert found.tests == budget and found.next_set is not None
            assert found.next_set not in outcome  # the set it stopped at was never tested
    assert overclaims == 0


def test_a_pair_among_eight_with_the_default_budget_is_found_or_not_claimed() -> None:
    names = _names(8)
    calls: list[tuple[str, ...]] = []
    found = search(names, _oracle({frozenset({"c2", "c5"})}, calls), budget=8)
    assert found.failing == ("c2", "c5") or not found.complete
    assert found.tests == 8
    full = search(names, _oracle({frozenset({"c2", "c5"})}, []), budget=worst_case(8))
    assert full.complete and full.failing == ("c2", "c5")


def test_one_harmful_change_among_eight_costs_at_most_six_tests() -> None:
    for culprit in _names(8):
        calls: list[tuple[str, ...]] = []
        found = search(_names(8), _oracle({frozenset({culprit})}, calls), budget=8)
        assert found.complete and found.failing == (culprit,) and len(calls) <= 6


def _adversary_worst(n: int) -> int:
    """The most tests over every possible sequence of outcomes (any oracle, not only monotone)."""

    class Branch(Exception):
        pass

    most, stack = 0, [()]
    while stack:
        prefix: tuple[Outcome, ...] = stack.pop()
        asked = [0]

        def test(
            key: tuple[str, ...], prefix: tuple[Outcome, ...] = prefix, asked: list[int] = asked
        ) -> Outcome:
            asked[0] += 1
            if asked[0] > len(prefix):
                raise Branch
            return prefix[asked[0] - 1]

        try:
            most = max(most, search(_names(n), test, 10_000).tests)
        except Branch:
            stack += [(*prefix, "PASS"), (*prefix, "FAIL")]
    return most


@pytest.mark.parametrize("n", range(1, 7))
def test_the_worst_case_is_the_longest_possible_run(n: int) -> None:
    assert _adversary_worst(n) == worst_case(n)


def test_past_the_enumerated_counts_the_published_bound_takes_over() -> None:
    assert [worst_case(n) for n in (9, 10, 20)] == [72, 85, 270]
    assert all(worst_case(n) <= (n * n + 7 * n) // 2 for n in range(2, 9))


def test_errors_do_not_count_as_failing() -> None:
    def oracle(key: tuple[str, ...]) -> Outcome:
        return "ERROR" if key == ("a",) else "PASS"

    found = search(["a", "b"], oracle, budget=8)
    assert found == Search(failing=None, complete=True, tests=2, next_set=None)
