"""Non-inferiority (`rule: bound`, issue 53): a max_drop gate PASSes only on a bound within
its margin, FAILs only on harm shown, and is INCONCLUSIVE otherwise; today's point rule is
unchanged beside it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.report_synthetic import build_report

from qgate.core.bounds import clean_items_to_show, loss_upper, score_lower, score_upper
from qgate.errors import ProfileError
from qgate.gates.judgement import QUALITY_DERIVATION
from qgate.gates.noninferiority import (
    CORRECTED_FROM,
    REFINED_FROM,
    bound_flags,
    bound_outcome,
    bound_reason,
    drop_bounds,
)
from qgate.gates.score import evaluate_scored
from qgate.gates.suite import evaluate_suite
from qgate.profile import AccuracyPolicy
from qgate.profile.detect import rule_as_run
from qgate.profile.load import load_profile_file
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.stats import FlipCounts
from qgate.report.model import Report
from qgate.report.verdict import overall, perf_status

SUITE = "math.short"


def _item(i: int, correct: bool, score: float | None = None) -> ItemRecord:
    return ItemRecord(
        id=f"m{i:04d}",
        prompt_sha256="0" * 64,
        output=str(int(correct)),
        answer="1" if correct else "0",
        expected="1",
        correct=correct,
        score=score,
    )


def _runs(n: int, lost: int, gained: int, right: int) -> tuple[SuiteRun, SuiteRun]:
    """`n` items: `right` both right, then `lost`, then `gained`, the rest both wrong."""
    ref, cand = [], []
    for i in range(n):
        r, c = (
            (True, True)
            if i < right
            else (True, False)
            if i < right + lost
            else (False, True)
            if i < right + lost + gained
            else (False, False)
        )
        ref.append(_item(i, r))
        cand.append(_item(i, c))
    return tuple(  # type: ignore[return-value]
        SuiteRun(suite=SUITE, role=role, data_sha256="0" * 64, items=items)  # type: ignore[arg-type]
        for role, items in (("reference", ref), ("candidate", cand))
    )


def _max_drop(policy: AccuracyPolicy, n: int, lost: int, gained: int) -> object:
    verdicts = evaluate_suite(SUITE, policy, *_runs(n, lost, gained, right=n // 2))
    return next(v for v in verdicts if v.gate == f"{SUITE}.max_drop")


BOUND = AccuracyPolicy(max_drop=0.15, rule="bound", significance=False)
POINT = AccuracyPolicy(max_drop=0.15, rule="point", significance=False)


def test_a_clean_candidate_on_enough_items_passes_with_the_bound_it_showed() -> None:
    v = _max_drop(BOUND, 81, 0, 0)
    assert v.passed and not v.inconclusive  # type: ignore[attr-defined]
    assert v.observed == pytest.approx(loss_upper(0, 0, 81))  # type: ignore[attr-defined]
    assert v.metric == "accuracy_drop_upper_bound"  # type: ignore[attr-defined]
    assert "loses at most 3.8 pts (95% upper bound" in v.reason  # type: ignore[attr-defined]


def test_the_bound_is_the_one_of_the_derivation_judged_by() -> None:
    """From quality derivation 6 the corrected score bound above 40 items; a report of 5 is
    judged (and verified) by Tango's plain one, as it was signed; at 40 items both exact."""
    runs = _runs(81, 2, 1, right=40)
    new, old = (
        next(v for v in evaluate_suite(SUITE, BOUND, *runs, derivation=d) if "max_drop" in v.gate)
        for d in (CORRECTED_FROM, CORRECTED_FROM - 1)
    )
    assert new.observed == pytest.approx(loss_upper(2, 1, 81))
    assert old.observed == pytest.approx(score_upper(2, 1, 81))
    assert new.observed > old.observed  # the plain bound was the generous one
    few = FlipCounts(both_correct=20, lost=9, gained=1, both_wrong=10)  # 40 items
    assert drop_bounds(BOUND, few, CORRECTED_FROM) == drop_bounds(BOUND, few, 5)
    # the INCONCLUSIVE line names the items a clean candidate needs by the same bound
    tight = AccuracyPolicy(max_drop=0.05, rule="bound", significance=False)
    one = FlipCounts(both_correct=40, lost=1, gained=0, both_wrong=40)
    line, old_line = (bound_reason(tight, SUITE, one, d) for d in (6, 5))
    assert f"at least {clean_items_to_show(0.05)} items" in line  # 61
    assert f"at least {clean_items_to_show(0.05, corrected=False)} items" in old_line  # 52


def test_the_bound_is_the_default_rule_and_point_a_named_one() -> None:
    assert AccuracyPolicy(max_drop=0.15).rule == "bound"
    assert AccuracyPolicy(max_drop=0.15, rule="point").rule == "point"


def test_a_clean_candidate_on_eight_items_is_inconclusive_where_the_point_rule_passes() -> None:
    unsure = _max_drop(BOUND, 8, 0, 0)
    assert not unsure.passed and unsure.inconclusive  # type: ignore[attr-defined]
    assert "INCONCLUSIVE" in unsure.reason and "at least 19 items" in unsure.reason  # type: ignore[attr-defined]
    point = _max_drop(POINT, 8, 0, 0)
    assert point.passed and not point.inconclusive  # type: ignore[attr-defined]
    assert point.observed == 0.0  # type: ignore[attr-defined]


def test_a_twenty_point_drop_on_twenty_items_passes_the_point_rule_and_not_the_bound() -> None:
    # issue 53's Why: recall fell 20 points on 20 items and the point rule at 0.2 passed it
    policy = AccuracyPolicy(max_drop=0.2, significance=False)
    runs = _runs(20, 9, 5, right=3)
    by_rule = {
        rule: next(
            v
            for v in evaluate_suite(SUITE, policy.model_copy(update={"rule": rule}), *runs)
            if v.gate.endswith("max_drop")
        )
        for rule in ("point", "bound")
    }
    assert by_rule["point"].passed
    assert not by_rule["bound"].passed and by_rule["bound"].inconclusive


def test_harm_shown_fails_outright() -> None:
    v = _max_drop(BOUND, 60, 25, 0)
    assert score_lower(25, 0, 60) > 0.15
    assert not v.passed and not v.inconclusive  # type: ignore[attr-defined]
    assert "harm shown" in v.reason  # type: ignore[attr-defined]


@pytest.mark.parametrize("n", [10, 33, 60])
def test_outcomes_are_monotone_in_the_candidates_favour(n: int) -> None:
    rank = {"pass": 0, "inconclusive": 1, "fail": 2}
    for gained in range(0, n, 3):
        previous = -1
        for lost in range(n - gained + 1):
            flips = FlipCounts(
                both_correct=n - lost - gained, lost=lost, gained=gained, both_wrong=0
            )
            now = rank[bound_outcome(BOUND, flips)]
            assert now >= previous, (n, lost, gained)
            previous = now


def test_the_run_is_inconclusive_skips_perf_and_a_failure_outranks_it() -> None:
    unsure = _max_drop(BOUND, 8, 0, 0)
    passed = _max_drop(BOUND, 81, 0, 0)
    failed = _max_drop(POINT, 20, 10, 0)
    assert perf_status([passed, unsure], False, False) == "skipped: gates inconclusive"  # type: ignore[list-item]
    assert overall([passed, unsure], "skipped: gates inconclusive") == "INCONCLUSIVE"  # type: ignore[list-item]
    assert overall([unsure, failed], "skipped: gates failed") == "FAIL"  # type: ignore[list-item]


def _scored(diffs: list[float]) -> tuple[SuiteRun, SuiteRun]:
    ref = [_item(i, True, 0.5 + max(d, 0) / 2) for i, d in enumerate(diffs)]
    cand = [_item(i, True, 0.5 - max(-d, 0) / 2) for i, d in enumerate(diffs)]
    return tuple(  # type: ignore[return-value]
        SuiteRun(suite="lm_eval.x", role=role, data_sha256="0" * 64, items=items)  # type: ignore[arg-type]
        for role, items in (("reference", ref), ("candidate", cand))
    )


def test_fractional_scores_with_no_change_are_bounded_by_the_items_not_by_zero_width() -> None:
    policy = AccuracyPolicy(max_drop=0.1, rule="bound", significance=False)
    few = evaluate_scored("lm_eval.x", policy, *_scored([0.0] * 8))
    assert few[0].inconclusive and few[0].observed == pytest.approx(loss_upper(0, 0, 8))
    many = evaluate_scored("lm_eval.x", policy, *_scored([0.0] * 60))
    assert many[0].passed and many[0].observed == pytest.approx(loss_upper(0, 0, 60))
    harm = evaluate_scored("lm_eval.x", policy, *_scored([0.4] * 30 + [0.3] * 30))
    assert not harm[0].passed and not harm[0].inconclusive


def test_a_report_from_before_the_rule_is_read_as_it_ran_by_the_point_rule() -> None:
    # a stored profile dumps every field, so a policy without `rule` predates the key
    stored = {
        "quality": {
            "math": {"max_drop": 0.1, "significance": True},
            "lm_eval": [{"task": "t", "max_drop": 0.1, "significance": True, "rule": "bound"}],
        }
    }
    shown = rule_as_run(stored)
    assert shown["quality"]["math"]["rule"] == "point"
    assert shown["quality"]["lm_eval"][0]["rule"] == "bound"  # written: kept
    assert "rule" not in stored["quality"]["math"]  # a copy
    data = build_report().model_dump(mode="json")
    data["profile"] = _without_rules(data["profile"])
    assert Report.model_validate(data).profile["quality"]["math"]["rule"] == "point"


def test_a_profile_file_read_for_an_older_report_takes_the_rule_it_ran_by(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: t\nmodel: {embedded: smollm2}\ncandidate: {}\nquality:\n"
        "  math: {prompts: [short], max_drop: 0.2, limit: 8}\n"
        "  recall: {max_drop: 0.2, rule: bound, haystacks: 8}\n"
    )
    with pytest.raises(ProfileError) as refused:
        load_profile_file(path, check_files=False)  # today: 8 items show no 20 points
    assert "quality.math.max_drop" in refused.value.details[0]
    assert "can never pass" in refused.value.details[0]
    before = load_profile_file(path, check_files=False, rule="point").profile.quality
    assert before.math is not None and before.math.rule == "point"
    assert before.recall is not None and before.recall.rule == "bound"


def _without_rules(data: object) -> object:
    if isinstance(data, dict):
        return {k: _without_rules(v) for k, v in data.items() if k != "rule"}
    return [_without_rules(v) for v in data] if isinstance(data, list) else data


def test_derivation_7_refines_the_exact_bound_and_mirrors_the_lower_one() -> None:
    """Two tables whose verdict derivation 7 changes, and the older reports judged as signed:
    3 lost, 4 gained of 27 at a 20-point margin, α 0.0167, PASSed on the grid's supremum
    (upper 0.19998), which slipped to 1.0002 α there; the refined one reads 0.20001. 9 lost,
    none gained of 27 at α 0.05 FAILed on Tango's plain lower bound (0.205), whose false FAIL
    at the margin reaches 1.6 α; the mirrored exact one reads 0.179."""
    edge = AccuracyPolicy(max_drop=0.2, rule="bound", significance=False, alpha=0.0167)
    f = FlipCounts(both_correct=10, lost=3, gained=4, both_wrong=10)
    assert bound_outcome(edge, f, CORRECTED_FROM) == "pass"
    assert bound_outcome(edge, f, REFINED_FROM) == bound_outcome(edge, f) == "inconclusive"
    harm = AccuracyPolicy(max_drop=0.2, rule="bound", significance=False, alpha=0.05)
    g = FlipCounts(both_correct=10, lost=9, gained=0, both_wrong=8)
    assert bound_outcome(harm, g, CORRECTED_FROM) == "fail"
    assert bound_outcome(harm, g) == "inconclusive"
    assert drop_bounds(harm, g)[0] < 0.2 < drop_bounds(harm, g, CORRECTED_FROM)[0]


def test_the_newest_derivation_is_every_default() -> None:
    """The bound functions default to the newest bound: REFINED_FROM, the last derivation that
    changed a bound (8 added the agent results' `served` gate, no bound)."""
    assert QUALITY_DERIVATION >= REFINED_FROM == 7
    assert bound_flags(QUALITY_DERIVATION) == bound_flags(REFINED_FROM)
    assert bound_flags() == bound_flags(QUALITY_DERIVATION) == {"corrected": True, "refined": True}
    assert bound_flags(CORRECTED_FROM) == {"corrected": True, "refined": False}
    assert bound_flags(5) == {"corrected": False, "refined": False}
