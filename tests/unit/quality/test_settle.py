"""Exact curtailment: a suite that stops early never gets another verdict than the whole run.

The property test draws random paired outcome sequences, policies, block
sizes and how far ahead one side runs, stops where the board says the suite
is settled (or, with `stop: verdict`, its FAIL is), and compares every
verdict of the stopped suite with the verdict of all its items.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from qgate.gates.board import SettleBoard
from qgate.gates.quality import evaluate_quality, evaluate_suite, settled_gates
from qgate.profile import AccuracyPolicy, MathSuite, QualitySpec
from qgate.quality.board import in_blocks
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.settle import bounds, stop_problems

SUITE = "math.short"


def _item(i: int, correct: bool, output: str | None = None) -> ItemRecord:
    return ItemRecord(
        id=f"m{i:04d}",
        prompt_sha256="0" * 64,
        output=output or str(int(correct)),
        answer="1" if correct else "0",
        expected="1",
        correct=correct,
    )


def _run(role: str, items: list[ItemRecord], planned: int | None = None) -> SuiteRun:
    stopped = "settled" if planned is not None and len(items) < planned else None
    return SuiteRun(
        suite=SUITE,
        role=role,
        data_sha256="0" * 64,
        items=items,  # type: ignore[arg-type]
        planned=planned if stopped else None,
        stopped=stopped,
    )


def _policy(rng: random.Random) -> dict[str, object]:
    policy: dict[str, object] = {
        "significance": rng.random() < 0.7,
        "alpha": rng.choice([0.01, 0.0167, 0.05]),
    }
    if rng.random() < 0.7:
        policy["max_drop"] = rng.choice([0.0, 0.05, 0.1, 0.2])
        if rng.random() < 0.5:  # non-inferiority: a third outcome, INCONCLUSIVE, to settle too
            policy["rule"] = "bound"
    if rng.random() < 0.4:
        policy["min_accuracy"] = rng.choice([0.2, 0.5, 0.8])
    if rng.random() < 0.4:
        policy["max_flips"] = rng.randint(0, 6)
    return policy


def _outcomes(rng: random.Random, n: int) -> tuple[list[bool], list[bool]]:
    acc, flip = rng.random(), rng.choice([0.0, 0.05, 0.2, 0.5])
    lose = rng.random()
    ref = [rng.random() < acc for _ in range(n)]
    cand = [(not r if rng.random() < flip and (r or rng.random() > lose) else r) for r in ref]
    return ref, cand


def _stop_point(
    board: SettleBoard, ref: list[bool], cand: list[bool], block: int, lead: int
) -> tuple[int, int, str | None]:
    """Post blocks the way two stages side by side do (the reference `lead` blocks ahead)."""
    n = len(ref)
    r_done = c_done = 0
    while r_done < n or c_done < n:
        if r_done < n and (r_done - c_done < lead * block or c_done >= n):
            r_done = min(n, r_done + block)
            why = board.post("reference", SUITE, [_item(i, ref[i]) for i in range(r_done)], n)
        else:
            c_done = min(n, c_done + block)
            why = board.post("candidate", SUITE, [_item(i, cand[i]) for i in range(c_done)], n)
        if why is not None:
            return r_done, c_done, why
    return n, n, None


@pytest.mark.parametrize("mode", ["settled", "verdict"])
def test_stopping_never_changes_a_verdict(mode: str) -> None:
    rng = random.Random(20261201)
    stops = bound_stops = 0
    for trial in range(100):
        n = rng.randint(4, 60)
        ref, cand = _outcomes(rng, n)
        policy = _policy(rng)
        spec = QualitySpec(math=MathSuite(prompts=["short"], **policy), stop=mode)  # type: ignore[arg-type]
        assert spec.math is not None
        whole = [
            _run(role, [_item(i, ok) for i, ok in enumerate(side)])
            for role, side in (("reference", ref), ("candidate", cand))
        ]
        full = evaluate_suite(SUITE, spec.math, *whole)
        block, lead = rng.randint(1, 9), rng.randint(0, 2)
        r_done, c_done, why = _stop_point(SettleBoard(spec), ref, cand, block, lead)
        if why is None:
            continue
        stops += 1
        bound_stops += spec.math.rule == "bound"
        runs = [
            _run("reference", [_item(i, ref[i]) for i in range(r_done)], n),
            _run("candidate", [_item(i, cand[i]) for i in range(c_done)], n),
        ]
        stopped = evaluate_quality(spec, runs, None)
        expected = {v.gate: v.passed for v in full}
        unsure = {v.gate: v.inconclusive for v in full}
        for v in stopped:
            if v.settled:
                assert v.passed == expected[v.gate], (trial, v.reason)
                assert v.inconclusive == unsure[v.gate], (trial, v.reason)
            else:
                assert mode == "verdict" and not v.passed, (trial, v.reason)
        if mode == "verdict" and not all(v.settled for v in stopped):
            # only a settled FAIL (never an INCONCLUSIVE) leaves gates open
            assert any(not ok and not unsure[g] for g, ok in expected.items()), trial
        assert not any(v.gate.endswith(".pairing") for v in stopped), trial
        assert stop_problems(spec, runs, stopped) == [], trial
    assert stops > 20, stops  # the property was exercised, not vacuous
    assert bound_stops > 5, bound_stops  # ... and on non-inferiority gates too


def test_bounds_fix_what_one_side_answered() -> None:
    ref = [_item(0, True), _item(1, False), _item(2, True)]
    cand = [_item(0, False), _item(3, True)]
    c = bounds(ref, cand, planned=6)
    # known pair 0 lost; ref-only 1 (wrong), 2 (right); cand-only 3 (right); 4, 5 open
    assert (c.known.lost, c.known.n, c.open_items) == (1, 1, 5)
    assert (c.worst.lost, c.worst.gained, c.worst.both_correct, c.worst.both_wrong) == (4, 0, 1, 1)
    assert (c.best.lost, c.best.gained, c.best.both_correct, c.best.both_wrong) == (1, 4, 1, 0)
    assert c.worst.n == c.best.n == 6


def test_a_gate_is_settled_only_when_both_extremes_agree() -> None:
    policy = AccuracyPolicy(max_flips=2, significance=False)
    lost3 = [_item(i, True) for i in range(3)], [_item(i, False) for i in range(3)]
    assert settled_gates(policy, *lost3, planned=10) == {"max_flips": "fail"}
    one = [_item(0, True)], [_item(0, False)]
    assert settled_gates(policy, *one, planned=10) == {"max_flips": None}
    assert settled_gates(policy, *one, planned=2) == {"max_flips": "pass"}


def test_verify_finds_stops_the_records_do_not_allow() -> None:
    ref = _run("reference", [_item(i, True) for i in range(10)])
    cand = _run("candidate", [_item(0, False)], planned=10)
    settled = QualitySpec(math=MathSuite(prompts=["short"], max_drop=0.1), stop="settled")
    verdicts = evaluate_quality(settled, [ref, cand], None)
    assert [v.settled for v in verdicts] == [False, False]  # max_drop, significance
    assert "NOT SETTLED: stopped at 1 of 10 items" in verdicts[0].reason
    assert stop_problems(settled, [ref, cand], verdicts) == [
        "math.short (candidate) stopped at 1 of 10 items, but its records do not settle "
        "math.short.max_drop"
    ]
    off = settled.model_copy(update={"stop": "off"})
    assert stop_problems(off, [ref, cand], evaluate_quality(off, [ref, cand], None)) == [
        "math.short (candidate) records an early stop but the profile's quality.stop is off"
    ]


def test_a_settled_fail_stops_the_rest_and_their_gates_are_not_settled() -> None:
    spec = QualitySpec(math=MathSuite(prompts=["short", "long"], max_drop=0.1), stop="verdict")
    ref = [_item(i, True) for i in range(10)]
    # 5 lost of the 10 planned whatever the rest do: the lower bound 14.4 pts > 10 (4 lost
    # FAILed only on Tango's plain lower bound, 10.2; derivation 7's exact one reads 6.7)
    runs = [_run("reference", ref), _run("candidate", [_item(i, False) for i in range(5)], 10)]
    verdicts = evaluate_quality(spec, runs, None)
    by_gate = {v.gate: v for v in verdicts}
    assert by_gate["math.short.max_drop"].settled and not by_gate["math.short.max_drop"].passed
    assert not by_gate["math.long.max_drop"].settled
    assert (
        "not run: the quality stage stopped once the verdict was FAIL (math.short.max_drop "
        "settled)" in by_gate["math.long.max_drop"].reason
    )
    assert stop_problems(spec, runs, verdicts) == []
    # without a decisive failure the missing run fails as it always did, settled
    honest = [_run("reference", ref), _run("candidate", [_item(i, True) for i in range(10)])]
    assert all(v.settled for v in evaluate_quality(spec, honest, None))


def test_in_blocks_stops_where_the_board_says_and_records_the_plan() -> None:
    spec = QualitySpec(
        math=MathSuite(prompts=["short"], max_flips=1, significance=False),
        stop="settled",
        stop_block=2,
    )
    board = SettleBoard(spec, [_run("reference", [_item(i, True) for i in range(10)])])
    asked: list[tuple[int, int]] = []

    async def answer(lo: int, hi: int) -> list[ItemRecord]:
        asked.append((lo, hi))
        return [_item(i, False) for i in range(lo, hi)]

    records, planned, why = asyncio.run(in_blocks(board, "candidate", SUITE, 10, answer))
    assert asked == [(0, 2)] and len(records) == 2 and planned == 10  # 2 lost > 1 allowed
    assert why == "settled at 2 of 10 items"
    off = SettleBoard(spec.model_copy(update={"stop": "off"}))
    asked.clear()
    records, planned, why = asyncio.run(in_blocks(off, "candidate", SUITE, 10, answer))
    assert asked == [(0, 10)] and (planned, why) == (None, None)


def test_no_effect_failing_keeps_a_suite_going_while_every_answer_is_the_same() -> None:
    spec = QualitySpec(
        math=MathSuite(prompts=["short"], max_flips=5, significance=False),
        stop="settled",
        stop_block=2,
        on_no_effect="fail",
    )
    board = SettleBoard(spec, [_run("reference", [_item(i, True) for i in range(4)])])
    same = [_item(i, True) for i in range(3)]
    assert board.post("candidate", SUITE, same, 4) is None  # max_flips settled, no-effect open
    differs = [*same[:2], _item(2, True, output="1 ")]
    assert board.post("candidate", SUITE, differs, 4) == "settled at 3 of 4 items"


@pytest.mark.parametrize("stop", ["settled", "verdict"])
def test_two_stopped_sides_whose_items_outnumber_the_plan_are_refused(stop: str) -> None:
    ref = _run("reference", [_item(i, True) for i in (0, 1, 2)], planned=4)
    cand = _run("candidate", [_item(i, False) for i in (0, 3, 4)], planned=4)
    spec = QualitySpec(math=MathSuite(prompts=["short"], max_drop=0.1), stop=stop)  # type: ignore[arg-type]
    verdicts = evaluate_quality(spec, [ref, cand], None)
    assert stop_problems(spec, [ref, cand], verdicts)[0] == (
        "math.short: the reference's 3 and the candidate's 3 items are 5 distinct items, "
        "more than the 4 planned per side"
    )
    within = _run("candidate", [_item(i, False) for i in (0, 3)], planned=4)
    verdicts = evaluate_quality(spec, [ref, within], None)
    assert not any("distinct items" in p for p in stop_problems(spec, [ref, within], verdicts))
