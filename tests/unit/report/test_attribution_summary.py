"""The attribution's conclusion says what the trials show, and no more.

Stand-in oracles over eight changes: the summary calls a set "the smallest
failing set" only where the search showed it 1-minimal, and otherwise says the
budget ran out, after how many lives, and how many the search may need.
"""

from __future__ import annotations

import pytest

from qgate.core.ddmin import Outcome, search, worst_case
from qgate.profile.changes import Change
from qgate.report.attribution import Attribution, Trial, budget_note, summary_lines

NAMES = [f"c{i}" for i in range(8)]


def _attributed(culprit: set[str], budget: int) -> Attribution:
    trials: list[Trial] = []

    def oracle(key: tuple[str, ...]) -> Outcome:
        verdict: Outcome = "FAIL" if culprit <= set(key) else "PASS"
        trials.append(Trial(name="-".join(key), changes=list(key), verdict=verdict))
        return verdict

    found = search(NAMES, oracle, budget)
    return Attribution(
        changes=[Change(name=n, reference="-", candidate="1") for n in NAMES],
        trials=trials,
        minimal=list(found.failing) if found.failing else None,
        complete=found.complete,
        lives=len(trials),
        max_lives=budget,
        not_tried=[" + ".join(found.next_set)] if found.next_set else [],
    )


@pytest.mark.parametrize("culprit", [{"c3"}, {"c2", "c5"}, {"c1", "c4", "c6"}, set(NAMES)])
def test_every_budget_gives_a_conclusion_the_trials_show(culprit: set[str]) -> None:
    for budget in range(1, worst_case(8) + 1):
        att = _attributed(culprit, budget)
        head = summary_lines(att)[0]
        if att.complete:
            assert "not minimal" not in head
            if culprit == set(NAMES):
                assert "only all of the changes together" in head
            else:
                assert f"the smallest failing set is {' + '.join(sorted(culprit))}" in head
        else:
            assert head.startswith(
                f"attribution: not minimal: budget spent after {budget} lives"
            ), head
            assert "smallest failing set is" not in head and "only all" not in head
            assert f"showing minimality may take up to {worst_case(8)} lives" in head


def test_a_pair_among_eight_with_the_default_budget_is_not_overclaimed() -> None:
    att = _attributed({"c2", "c5"}, 8)
    head = summary_lines(att)[0]
    if att.minimal == ["c2", "c5"] and att.complete:
        assert "the smallest failing set is c2 + c5" in head
    else:
        assert "not minimal: budget spent after 8 lives" in head
        assert f"showing minimality may take up to {worst_case(8)} lives" in head
    assert len(att.not_tried) <= 1


def test_one_culprit_among_eight_is_shown_within_the_default_budget() -> None:
    for culprit in NAMES:
        att = _attributed({culprit}, 8)
        assert att.complete and att.minimal == [culprit]
        assert summary_lines(att)[0].startswith(
            f"attribution: the smallest failing set is {culprit} (without any one of its "
            "changes it passes)"
        )


def test_the_budget_note_says_what_the_search_may_need() -> None:
    assert budget_note(8, 8) == (
        f"8 changes: showing the smallest failing set minimal may take up to {worst_case(8)} "
        "lives, the budget is 8; past it the set found is reported as not minimal"
    )
    assert budget_note(3, 8) == (
        f"3 changes: the budget of 8 lives covers the search's worst case ({worst_case(3)})"
    )
