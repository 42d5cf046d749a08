from __future__ import annotations

from pathlib import Path

import pytest

from qgate.errors import BadInput
from qgate.perf.loadgen import arrival_offsets_ns
from qgate.perf.runner import levels
from qgate.perf.workloads import load_trace, scenario_seed, window
from qgate.profile import FixedScenario, PerfSpec


@pytest.mark.parametrize(("n", "offset"), [(5, 0), (5, 8), (25, 3), (1, 9)])
def test_window_has_exact_length(n: int, offset: int) -> None:
    pool = list(range(10))
    w = window(pool, n, offset)
    assert len(w) == n
    assert w[0] == offset % 10


def test_arrivals_are_seeded_and_near_the_rate() -> None:
    a = arrival_offsets_ns(2000, 10.0, 1.0, seed=1)
    assert a == arrival_offsets_ns(2000, 10.0, 1.0, seed=1)
    assert a != arrival_offsets_ns(2000, 10.0, 1.0, seed=2)
    assert a[0] == 0
    assert 180 < a[-1] / 1e9 < 220
    bursty = arrival_offsets_ns(2000, 10.0, 0.2, seed=1)
    gaps = [b - x for x, b in zip(bursty, bursty[1:], strict=False)]
    cv = (sum((g - sum(gaps) / len(gaps)) ** 2 for g in gaps) / len(gaps)) ** 0.5 / (
        sum(gaps) / len(gaps)
    )
    assert cv > 1.5  # burstiness < 1 means more variable gaps than Poisson (cv = 1)


def test_arrivals_stop_at_horizon() -> None:
    a = arrival_offsets_ns(0, 20.0, 1.0, seed=0, horizon_s=2.0)
    assert a and max(a) < 2e9


def test_sweep_runs_are_named_per_level() -> None:
    s = FixedScenario(name="x", input_tokens=4, output_tokens=2, concurrency=[1, 4])
    assert levels(s) == [("x@c1", 1), ("x@c4", 4)]


def test_common_long_prefill_fits_in_three_lines() -> None:
    spec = PerfSpec.model_validate(
        {"scenarios": [{"name": "long", "input_tokens": 8192, "output_tokens": 256}]}
    )
    s = spec.scenarios[0]
    assert isinstance(s, FixedScenario)
    assert (s.warmup, s.requests, s.concurrency) == (2, 5, 1)


def test_trace_loading(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text(
        '{"timestamp": 1.5, "input_tokens": 10, "output_tokens": 3}\n'
        '{"timestamp": 0.5, "input_tokens": 20, "output_tokens": 4}\n'
    )
    assert load_trace(p) == [(0.5, 20, 4), (1.5, 10, 3)]
    p.write_text('{"timestamp": 1, "input_tokens": 10}\n')
    with pytest.raises(BadInput, match=":1:"):
        load_trace(p)
    # read through jsonlines: blank lines still count, a broken line is named by number
    p.write_text('{"timestamp": 1, "input_tokens": 10, "output_tokens": 3}\n\n{"timestamp": \n')
    with pytest.raises(BadInput, match=r"t\.jsonl:3: need timestamp"):
        load_trace(p)


def test_seed_is_stable() -> None:
    assert scenario_seed("a") == scenario_seed("a") != scenario_seed("b")
