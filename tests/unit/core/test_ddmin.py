"""ddmin over named changes: singles first, then halving, within a budget of tests."""

from __future__ import annotations

import itertools

import pytest

from qgate.core.ddmin import Outcome, search


def _oracle(culprits: set[frozenset[str]], calls: list[tuple[str, ...]]):  # type: ignore[no-untyped-def]
    """FAIL when the tested set contains every change of one culprit set."""

    def oracle(key: tuple[str, ...]) -> Outcome:
        calls.append(key)
        return "FAIL" if any(c <= set(key) for c in culprits) else "PASS"

    return oracle


def test_a_single_harmful_change_is_found_by_the_singles_alone() -> None:
    calls: list[tuple[str, ...]] = []
    found, skipped = search(["a", "b", "c"], _oracle({frozenset({"b"})}, calls), budget=8)
    assert found == ("b",) and skipped == []
    assert calls == [("a",), ("b",), ("c",)]  # each alone first, in order


@pytest.mark.parametrize("pair", list(itertools.combinations("abcdef", 2)))
def test_an_interaction_of_two_changes_is_found_by_halving(pair: tuple[str, str]) -> None:
    calls: list[tuple[str, ...]] = []
    found, _ = search(list("abcdef"), _oracle({frozenset(pair)}, calls), budget=40)
    assert found == pair
    assert len(set(calls)) == len(calls)  # no set tested twice


def test_the_budget_stops_the_search_and_says_what_was_left() -> None:
    calls: list[tuple[str, ...]] = []
    found, skipped = search(list("abcd"), _oracle({frozenset("cd")}, calls), budget=3)
    assert len(calls) == 3 and found is None
    assert skipped and skipped[0] == "d"  # the fourth single


def test_errors_do_not_count_as_failing() -> None:
    def oracle(key: tuple[str, ...]) -> Outcome:
        return "ERROR" if key == ("a",) else "PASS"

    assert search(["a", "b"], oracle, budget=8) == (None, [])
