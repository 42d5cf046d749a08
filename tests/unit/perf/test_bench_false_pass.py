"""perf/bench_false_pass.py at reduced reps (issue 53 item 7): qgate's bound PASSes a candidate
whose true loss is the margin at most α of the time (within Monte-Carlo error), where NeMo's
paired Wald interval, empty when nothing flips, PASSes it far more often."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
REPS = 1000
SEED = 53


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_false_pass", ROOT / "perf" / "bench_false_pass.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_false_pass"] = bench
    spec.loader.exec_module(bench)
    return bench


bench = _bench()


def _cell(n: int, margin: float, disc: float) -> Any:
    (cell,) = bench.simulate(n, margin, disc, (0.7,), REPS, SEED)
    return cell


@pytest.mark.parametrize(
    ("n", "margin", "disc"),
    [
        (20, 0.15, 0.15),  # the exact bound (n <= 40); the candidate only loses
        (40, 0.10, 0.10),  # the exact bound at its last n
        (81, 0.10, 0.20),  # the corrected score bound (n > 40, quality derivation 6)
        (200, 0.05, 0.05),
    ],
)
def test_qgate_bound_passes_a_candidate_at_the_margin_at_most_alpha(
    n: int, margin: float, disc: float
) -> None:
    cell = _cell(n, margin, disc)
    assert not cell.refused
    assert cell.false_pass["qgate bound"] <= bench.ALPHA + bench.slack(REPS)
    assert cell.bound_power is not None and cell.bound_power > 0.3  # it can PASS at all


def test_nemo_wald_passes_the_margin_far_more_often_where_nothing_flips_often() -> None:
    # 20 items, a candidate that loses 15% and gains nothing: 4% of suites see no flip (the
    # Wald interval is [0, 0]) and 14% one lost item (upper limit 0.05 + 1.96 x 0.049 < 0.15)
    cell = _cell(20, 0.15, 0.15)
    wald, bound = cell.false_pass["NeMo Wald"], cell.false_pass["qgate bound"]
    assert wald > 0.12 > bench.ALPHA + bench.slack(REPS) >= bound


def test_point_rules_are_a_coin_flip_at_the_margin_at_any_n() -> None:
    cell = _cell(500, 0.10, 0.10)
    assert 0.4 < cell.false_pass["floor"] < 0.6
    assert 0.4 < cell.false_pass["vLLM rtol"] < 0.6
    assert cell.false_pass["qgate bound"] <= bench.ALPHA + bench.slack(REPS)


def test_a_bound_qgate_refuses_is_reported_refused_not_judged() -> None:
    cell = _cell(20, 0.05, 0.05)  # 20 clean items bound the loss above 5 points
    assert cell.refused and cell.false_pass["qgate bound"] is None and cell.bound_power is None
    assert cell.false_pass["qgate point"] is not None  # the other rules are still judged


def test_the_simulation_agrees_with_the_exact_sum() -> None:
    cell = _cell(20, 0.25, 0.25)
    exact = bench.exact_false_pass(20, 0.25, 0.25)
    assert exact <= bench.ALPHA
    assert abs(cell.false_pass["qgate bound"] - exact) <= bench.slack(REPS)
