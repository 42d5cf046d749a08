"""Interleaved perf blocks: the point pools requests, the interval covers the blocks' spread."""

from __future__ import annotations

import math

import pytest
from helpers.perf_runs import run_of

from qgate.perf.blocks import block_interval, compare_blocks, pooled, widened
from qgate.perf.compare import compare
from qgate.perf.records import ScenarioRun


def _block(ttfts: list[float], role: str, block: int) -> ScenarioRun:
    return run_of(ttfts, itl=10).model_copy(update={"role": role, "block": block})


def _ttft(rows: list) -> object:  # type: ignore[type-arg]
    return next(r for r in rows if r.metric == "ttft_ms.p50")


def test_one_block_is_exactly_compare() -> None:
    ref = _block([100, 110, 120, 130], "reference", 0)
    cand = _block([50, 60, 70, 80], "candidate", 0)
    assert compare_blocks([ref], [cand], resamples=200, seed=3, compare=compare) == compare(
        ref, cand, resamples=200, seed=3
    )


def test_drifting_blocks_widen_the_interval_beyond_the_request_bootstrap() -> None:
    # block 0: candidate at half the reference's TTFT; block 1: the machine slowed the
    # candidate's block only, so its ratio is ~0.9: the requests alone do not show that spread
    refs = [_block([100, 101, 102, 103, 104, 105], "reference", b) for b in (0, 1)]
    cands = [
        _block([50, 51, 52, 53, 54, 55], "candidate", 0),
        _block([90, 91, 92, 93, 94, 95], "candidate", 1),
    ]
    rows = compare_blocks(refs, cands, resamples=400, seed=1, compare=compare)
    ttft = _ttft(rows)
    pooled_only = _ttft(compare(pooled(refs), pooled(cands), resamples=400, seed=1))
    assert ttft.blocks == 2 and len(ttft.block_ratios) == 2
    assert ttft.block_ratios[0] == pytest.approx(52.5 / 102.5)
    assert ttft.block_ci_low < ttft.block_ratios[0] < ttft.block_ratios[1] < ttft.block_ci_high
    assert ttft.ci_low < pooled_only.ci_low and ttft.ci_high > pooled_only.ci_high
    # wider on the log scale than the request interval and than the block interval alone
    width = math.log(ttft.ci_high / ttft.ci_low)
    assert width > math.log(pooled_only.ci_high / pooled_only.ci_low)
    assert width >= math.log(ttft.block_ci_high / ttft.block_ci_low) - 1e-12
    assert ttft.ci_low <= ttft.ratio <= ttft.ci_high
    assert ttft.ratio == pooled_only.ratio  # the point is the pooled requests'


def test_block_interval_is_a_normal_interval_on_log_ratios() -> None:
    lo, hi = block_interval([0.8, 1.0, 1.25])
    logs = [math.log(0.8), 0.0, math.log(1.25)]
    sd = math.sqrt(sum(x * x for x in logs) / 2)
    assert lo == pytest.approx(math.exp(-1.96 * sd / math.sqrt(3)), rel=1e-4)
    assert hi == pytest.approx(1 / lo)
    assert block_interval([1.1]) == (None, None)
    assert block_interval([None, 1.0]) == (None, None)
    same = block_interval([1.2, 1.2, 1.2])
    assert same == pytest.approx((1.2, 1.2))


def test_pooled_sums_windows_and_keeps_every_request() -> None:
    a, b = _block([1, 2], "reference", 1), _block([3, 4, 5], "reference", 0)
    both = pooled([a, b])
    assert len(both.requests) == 5 and both.duration_ns == a.duration_ns + b.duration_ns
    assert pooled([a]) is a
    hits = "vllm:prefix_cache_hits"
    a = a.model_copy(
        update={"counters_before": {hits: 10.0, "x": 1.0}, "counters_after": {hits: 40.0}}
    )
    b = b.model_copy(update={"counters_before": {hits: 40.0}, "counters_after": {hits: 55.0}})
    both = pooled([a, b])  # the deltas add up; a counter one block lacks is left out
    assert both.counters_after == {hits: 45.0} and both.counters_before == {hits: 0.0}


def test_a_later_block_draws_other_prompts() -> None:
    from qgate.perf.workloads import BLOCK, scenario_seed

    first = scenario_seed("fixed-256x32")
    token = BLOCK.set(1)
    try:
        second = scenario_seed("fixed-256x32")
    finally:
        BLOCK.reset(token)
    assert second != first and scenario_seed("fixed-256x32") == first


def test_widened_adds_the_block_half_width_in_quadrature() -> None:
    lo, hi = widened(1.0, math.exp(-0.3), math.exp(0.4), 0.4)
    assert lo == pytest.approx(math.exp(-0.5))
    assert hi == pytest.approx(math.exp(math.hypot(0.4, 0.4)))
    assert widened(2.0, None, None, 0.1) == pytest.approx((2 * math.exp(-0.1), 2 * math.exp(0.1)))


def _in_round(run: ScenarioRun, round_: int) -> ScenarioRun:
    return run.model_copy(update={"round": round_})


def _rounds(
    cand_ttfts: list[list[float]], blocks: int = 1
) -> tuple[list[ScenarioRun], list[ScenarioRun]]:
    """Reference runs at TTFT ~100 ms in every round; the candidate's per round as given."""
    refs = [
        _in_round(_block([100, 101, 102, 103, 104, 105], "reference", b), k)
        for k in range(len(cand_ttfts))
        for b in range(blocks)
    ]
    cands = [
        _in_round(_block(ttfts, "candidate", b), k)
        for k, ttfts in enumerate(cand_ttfts)
        for b in range(blocks)
    ]
    return refs, cands


def test_a_spread_of_round_ratios_widens_the_interval() -> None:
    # round 0: the candidate at half the reference's TTFT; round 1 (a restart) at ~0.9
    refs, cands = _rounds([[50, 51, 52, 53, 54, 55], [90, 91, 92, 93, 94, 95]])
    ttft = _ttft(compare_blocks(refs, cands, resamples=400, seed=1, compare=compare))
    assert ttft.rounds == 2 and ttft.blocks == 1 and ttft.block_ratios == []
    assert ttft.round_ratios == pytest.approx([52.5 / 102.5, 92.5 / 102.5])
    logs = [math.log(r) for r in ttft.round_ratios]
    # each round the unit: mean -/+ t(0.975, 1) * s / sqrt(2), s = |l0 - l1| / sqrt(2)
    half = 12.706204736 * abs(logs[0] - logs[1]) / math.sqrt(2) / math.sqrt(2)
    centre = sum(logs) / 2
    assert ttft.ratio == pytest.approx(math.exp(centre))  # the interval's centre
    assert ttft.round_ci_low == pytest.approx(math.exp(centre - half))
    assert ttft.round_ci_high == pytest.approx(math.exp(centre + half))
    assert (ttft.ci_low, ttft.ci_high) == (ttft.round_ci_low, ttft.round_ci_high)
    assert ttft.ci_low < ttft.ratio < ttft.ci_high


def test_derivation_6_rounds_are_recomputed_as_they_were() -> None:
    refs, cands = _rounds([[50, 51, 52, 53, 54, 55], [90, 91, 92, 93, 94, 95]])
    rows = compare_blocks(refs, cands, resamples=400, seed=1, compare=compare, legacy_rounds=True)
    ttft = _ttft(rows)
    pooled_only = _ttft(compare(pooled(refs), pooled(cands), resamples=400, seed=1))
    logs = [math.log(r) for r in ttft.round_ratios]
    half = 1.96 * abs(logs[0] - logs[1]) / math.sqrt(2) / math.sqrt(2)
    centre = sum(logs) / 2
    assert ttft.round_ci_low == pytest.approx(math.exp(centre - half), rel=1e-3)
    assert ttft.round_ci_high == pytest.approx(math.exp(centre + half), rel=1e-3)
    assert ttft.ratio == pooled_only.ratio  # the point pooled every round's requests
    expected = widened(pooled_only.ratio, pooled_only.ci_low, pooled_only.ci_high, half)
    assert (ttft.ci_low, ttft.ci_high) == pytest.approx(expected, rel=1e-3)


def test_rounds_that_agree_leave_the_noise_within_a_life() -> None:
    refs, cands = _rounds([[50, 51, 52, 53, 54, 55]] * 3)
    ttft = _ttft(compare_blocks(refs, cands, resamples=400, seed=1, compare=compare))
    pooled_only = _ttft(compare(pooled(refs), pooled(cands), resamples=400, seed=1))
    assert ttft.rounds == 3 and ttft.round_ci_low == pytest.approx(ttft.round_ci_high)
    # a floor, not a sum: the request interval, not narrower and not wider
    assert (ttft.ci_low, ttft.ci_high) == pytest.approx((pooled_only.ci_low, pooled_only.ci_high))


def test_blocks_spread_is_taken_within_rounds() -> None:
    # two blocks per round, alike within a round, different between rounds: the restart's
    # effect is counted once, by the rounds, not again by the blocks
    refs, cands = _rounds([[50, 51, 52, 53, 54, 55], [90, 91, 92, 93, 94, 95]], blocks=2)
    ttft = _ttft(compare_blocks(refs, cands, resamples=200, seed=1, compare=compare))
    assert ttft.blocks == 4 and len(ttft.block_ratios) == 4 and ttft.rounds == 2
    assert ttft.block_ci_low == pytest.approx(ttft.block_ci_high)  # no spread within a round
    assert ttft.round_ci_low < ttft.round_ratios[0] < ttft.round_ratios[1] < ttft.round_ci_high


def test_one_round_whatever_its_number_is_as_before() -> None:
    refs = [_block([100, 101, 102, 103, 104, 105], "reference", b) for b in (0, 1)]
    cands = [
        _block([50, 51, 52, 53, 54, 55], "candidate", 0),
        _block([90, 91, 92, 93, 94, 95], "candidate", 1),
    ]
    before = compare_blocks(refs, cands, resamples=200, seed=2, compare=compare)
    later = compare_blocks(
        [_in_round(r, 2) for r in refs],
        [_in_round(c, 2) for c in cands],
        resamples=200,
        seed=2,
        compare=compare,
    )
    assert later == before and all(row.rounds == 1 and row.round_ratios == [] for row in before)


def test_records_without_a_round_load_as_round_0() -> None:
    data = _block([1, 2], "reference", 1).model_dump(mode="json")
    del data["round"]
    assert ScenarioRun.model_validate(data).round == 0
