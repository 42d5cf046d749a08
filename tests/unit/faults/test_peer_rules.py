"""The peers' accuracy rules (perf/faults/peer_rules.py): each passes what it should and fails
what it should, with the figures their sources compute."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("peer_rules", ROOT / "perf/faults/peer_rules.py")
assert _spec is not None and _spec.loader is not None
rules = importlib.util.module_from_spec(_spec)
sys.modules["peer_rules"] = rules
_spec.loader.exec_module(rules)


def pairs(both: int, lost: int, gained: int, neither: int) -> list[tuple[bool, bool]]:
    return (
        [(True, True)] * both
        + [(True, False)] * lost
        + [(False, True)] * gained
        + [(False, False)] * neither
    )


def test_vllm_rtol_is_numpy_isclose_with_the_candidate_as_scale() -> None:
    np = pytest.importorskip("numpy")
    # reference 0.50, candidate 0.46: |0.04| <= 0.08 * 0.46 = 0.0368? no -> fails
    p = pairs(46, 4, 0, 50)
    v = rules.vllm_rtol(p)
    assert v.passed is bool(np.isclose(0.50, 0.46, rtol=0.08)) is False
    # 0.50 vs 0.47: 0.03 <= 0.0376 -> passes
    assert rules.vllm_rtol(pairs(47, 3, 0, 50)).passed is bool(np.isclose(0.5, 0.47, rtol=0.08))
    # two-sided: a candidate far better fails too
    assert not rules.vllm_rtol(pairs(10, 0, 40, 50)).passed


def test_unpaired_z_matches_the_comparator_figure() -> None:
    # 60/100 against 40/100: se = sqrt(.24/99 + .24/99), z = .2/se
    v = rules.unpaired_z(pairs(40, 20, 0, 40))
    se = (2 * 0.24 / 99) ** 0.5
    from statistics import NormalDist

    assert v.observed == pytest.approx(2 * (1 - NormalDist().cdf(0.2 / se)))
    assert not v.passed
    # 5 lost of 100 both ways similar: not significant unpaired
    assert rules.unpaired_z(pairs(45, 5, 0, 50)).passed
    # identical constant answers: p 1, passes; all right against all wrong: fails
    assert rules.unpaired_z(pairs(0, 0, 0, 10)).passed
    assert not rules.unpaired_z(pairs(0, 10, 0, 0)).passed


def test_floor_and_mlperf_read_the_candidate_against_the_reference() -> None:
    assert rules.absolute_floor(pairs(46, 4, 0, 50)).passed  # 0.46 >= 0.45
    assert not rules.absolute_floor(pairs(44, 6, 0, 50)).passed  # 0.44 < 0.45
    assert not rules.absolute_floor(pairs(50, 0, 0, 50), floor=0.6).passed
    assert rules.mlperf_99(pairs(100, 0, 0, 0)).passed
    assert not rules.mlperf_99(pairs(98, 2, 0, 0)).passed  # 0.98 < 0.99
    assert rules.mlperf_99(pairs(99, 1, 0, 0)).passed
    assert set(rules.all_rules(pairs(1, 0, 0, 1), 0.1)) == set(rules.RULES)


def test_nemo_wald_passes_within_fails_beyond_and_is_inconclusive_between() -> None:
    # 4 lost, 2 gained of 100: drop 0.02, se sqrt(6 - 0.04)/100 = 0.0244, [-0.028, 0.068]
    v = rules.nemo_wald(pairs(50, 4, 2, 44), 0.10)
    assert v.passed and v.verdict == "PASS"
    assert v.observed == pytest.approx(0.02 + 1.959964 * (6 - 0.04) ** 0.5 / 100, abs=1e-6)
    assert rules.nemo_wald(pairs(50, 4, 2, 44), 0.05).verdict == "INCONCLUSIVE"
    # 30 lost, 0 gained of 100: [0.21, 0.39], wholly beyond a 15-point margin: FAIL
    harm = rules.nemo_wald(pairs(40, 30, 0, 30), 0.15)
    assert harm.verdict == "FAIL" and not harm.passed and not harm.inconclusive
    # nothing flips: zero width, PASS at any margin even on 5 items (issue 53's complaint)
    assert rules.nemo_wald(pairs(3, 0, 0, 2), 0.01).passed
    # a far better candidate passes (one-sided on the loss)
    assert rules.nemo_wald(pairs(10, 0, 40, 50), 0.05).passed


def test_items_needed_compares_at_equal_power() -> None:
    # a 10-point drop at 10% discordance, every flip a loss: qgate's paired test needs far
    # fewer items than the unpaired one; the 8% rtol of a 0.4 candidate (3.2 points) is below it
    need = rules.items_needed(0.5, 0.4, 0.1)
    assert need["qgate_mcnemar"] is not None and need["unpaired_z"] is not None
    assert need["qgate_mcnemar"] < need["unpaired_z"]
    assert need["vllm_rtol"] is not None and need["mlperf_99"] is not None
    # a 2-point drop: under the floor's 5-point margin and rtol's 8%: no size catches it
    small = rules.items_needed(0.5, 0.48, 0.1)
    assert small["absolute_floor"] is None and small["vllm_rtol"] is None
    assert small["mlperf_99"] is not None  # 1% of 0.5 is 0.5 points
    assert all(v is None for v in rules.items_needed(0.5, 0.5, 0.1).values())
    with pytest.raises(ValueError):
        rules.accuracies([])
