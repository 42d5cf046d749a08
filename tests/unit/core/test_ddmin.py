"""ddmin over named changes within a budget of tests, with stand-in oracles.

Exhaustive over small change counts: every culprit set, every budget. The
search either shows its answer 1-minimal (every set with one change fewer
tested and passing) or says it did not; an untested set never counts as passing.
"""

from __future__ import annotations

import itertools

import pytest

from qgate.core.ddmin import Outcome, Search, search, search_rounds, worst_case


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

        def oracle(
            key: tuple[str, ...], prefix: tuple[Outcome, ...] = prefix, asked: list[int] = asked
        ) -> Outcome:
            asked[0] += 1
            if asked[0] > len(prefix):
                raise Branch
            return prefix[asked[0] - 1]

        try:
            most = max(most, search(_names(n), oracle, 10_000).tests)
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


class _Out(Exception):
    def __init__(self, key: tuple[str, ...]) -> None:
        self.key = key


def _one_at_a_time(names, test, budget) -> Search:  # type: ignore[no-untyped-def]
    """The search as written before rounds (one test at a time): the reference for rounds."""
    tried: dict[tuple[str, ...], Outcome] = {}

    def fails(subset):  # type: ignore[no-untyped-def]
        key = tuple(n for n in names if n in subset)
        if key not in tried:
            if len(tried) >= budget:
                raise _Out(key)
            tried[key] = test(key)
        return tried[key] == "FAIL"

    current = list(names)

    def found(complete, next_set=None):  # type: ignore[no-untyped-def]
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
    except _Out as out:
        return found(False, out.key)
    return found(True)


def _random_oracle(seed: int, names: list[str]):  # type: ignore[no-untyped-def]
    import random

    rng = random.Random(seed)
    culprits = [frozenset(rng.sample(names, rng.randint(1, 3))) for _ in range(rng.randint(1, 2))]
    errors = {tuple(rng.sample(names, 1)) for _ in range(rng.randint(0, 2))}

    def oracle(key: tuple[str, ...]) -> Outcome:
        if key in errors:
            return "ERROR"
        return "FAIL" if any(c <= set(key) for c in culprits) else "PASS"

    return oracle


@pytest.mark.parametrize("seed", range(60))
def test_rounds_of_width_one_ask_exactly_what_one_at_a_time_asks(seed: int) -> None:
    names = _names(3 + seed % 5)
    oracle = _random_oracle(seed, names)
    budget = 2 + seed % 12
    calls_old: list[tuple[str, ...]] = []
    calls_new: list[tuple[str, ...]] = []
    old = _one_at_a_time(names, lambda k: calls_old.append(k) or oracle(k), budget)
    new = search_rounds(
        names, lambda ks: [calls_new.append(k) or oracle(k) for k in ks], budget, width=1
    )
    assert new == old and calls_new == calls_old


@pytest.mark.parametrize("width", [2, 3, 4])
@pytest.mark.parametrize("seed", range(40))
def test_wider_rounds_find_the_same_set_in_fewer_waves_within_the_budget(
    seed: int, width: int
) -> None:
    names = _names(4 + seed % 5)
    oracle = _random_oracle(seed, names)
    one: list[list[tuple[str, ...]]] = []
    wide: list[list[tuple[str, ...]]] = []
    budget = 64  # ample: both searches end by themselves

    def batches(log):  # type: ignore[no-untyped-def]
        return lambda ks: (log.append(list(ks)), [oracle(k) for k in ks])[1]

    got = search_rounds(names, batches(wide), budget, width)
    want = search_rounds(names, batches(one), budget, 1)
    assert (got.failing, got.complete) == (want.failing, want.complete)
    assert all(1 <= len(b) <= width for b in wide)
    assert len(wide) <= len(one)  # never more waves
    flat = [k for b in wide for k in b]
    assert len(set(flat)) == len(flat) == got.tests  # no set tested twice
    assert {k for b in one for k in b} <= set(flat)  # at most extra sets, none missing


def test_the_first_round_of_four_changes_on_two_lives_takes_one_wave_per_pair() -> None:
    waves: list[list[tuple[str, ...]]] = []

    def oracle_many(keys: list[tuple[str, ...]]) -> list[Outcome]:
        waves.append(keys)
        return ["FAIL" if "c" in k else "PASS" for k in keys]

    found = search_rounds(list("abcd"), oracle_many, budget=8, width=2)
    assert found.failing == ("c",) and found.complete
    # halves first (a b | c d): the second half fails; then c | d; then (c alone is 1-minimal)
    assert waves[0] == [("a", "b"), ("c", "d")]


@pytest.mark.parametrize("width", [1, 2, 3])
def test_a_round_never_starts_more_tests_than_the_budget(width: int) -> None:
    started: list[tuple[str, ...]] = []

    def oracle_many(keys: list[tuple[str, ...]]) -> list[Outcome]:
        started.extend(keys)
        return ["FAIL" if set("ae") <= set(k) else "PASS" for k in keys]

    found = search_rounds(list("abcdef"), oracle_many, budget=3, width=width)
    assert len(started) == found.tests <= 3
    assert not found.complete and found.next_set is not None
    assert found.next_set not in started


def test_width_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="width"):
        search_rounds(["a"], lambda ks: ["PASS"] * len(ks), 4, width=0)
