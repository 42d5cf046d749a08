"""verify compares recomputed floats up to 1e-9 relative: rounding passes, edits fail."""

from __future__ import annotations

from qgate.report.verify.compare_values import describe, same_value


def test_last_bit_differences_pass() -> None:
    # seen: one numerically equivalent refactor of the request-rate interval moved these
    stored = {"metric": "request_throughput", "ci_low": 1.3595471458451676, "n": 24}
    recomputed = {"metric": "request_throughput", "ci_low": 1.3595471458451673, "n": 24}
    assert same_value(stored, recomputed)
    assert same_value([0.0, 1e-300], [1e-13, 0.0])  # near zero: absolute 1e-12


def test_edits_and_type_changes_fail() -> None:
    assert not same_value({"ratio": 1.36}, {"ratio": 1.36 * (1 + 1e-6)})
    assert not same_value({"passed": True}, {"passed": 1})
    assert not same_value({"x": None}, {"x": 0.0})
    assert not same_value({"a": 1.0}, {"a": 1.0, "b": 2.0})
    assert not same_value([1.0, 2.0], [1.0])
    assert not same_value({"n": 24}, {"n": 25})
    assert not same_value({"gate": "a"}, {"gate": "b"})


def test_a_comparison_row_is_named_by_its_metric_not_its_place() -> None:
    stored = [{"metric": "ttft_ms.p50", "ratio": 1.94}, {"metric": "tpot_ms.p50", "ratio": 1.0}]
    again = [{"metric": "ttft_ms.p50", "ratio": 0.97}, {"metric": "tpot_ms.p50", "ratio": 1.0}]
    message = describe("perf fixed@c1: comparisons", stored, again)
    assert message == "perf fixed@c1: comparisons[ttft_ms.p50].ratio: 1.94 stored, 0.97 re-derived"
    moved = [{"metric": "tpot_ms.p50", "ratio": 1.0}, again[0]]
    assert "comparisons[0].metric" in describe("perf fixed@c1: comparisons", stored, moved)
