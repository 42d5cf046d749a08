"""perf/bench_sampled.py at reduced reps: its cells run on qgate's own gate functions, and the
table `qgate plan` quotes (qgate/quality/sampled_power.py) has its settings."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from qgate.quality.sampled_power import POWER

ROOT = Path(__file__).resolve().parents[3]


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_sampled", ROOT / "perf" / "bench_sampled.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules["bench_sampled"] = bench
    spec.loader.exec_module(bench)
    return bench


bench = _bench()


def test_a_greedy_fall_back_always_fails_and_a_a_never_does() -> None:
    assert bench.cell(64, 8, "greedy", 20, 1)["fail"] == 1.0
    assert bench.cell(64, 8, "A/A", 20, 1)["fail"] == 0.0


def test_the_quoted_table_has_the_benchmarks_settings_and_greedy_cell() -> None:
    # the greedy cell is exact at any reps: every trial FAILs
    assert POWER[(64, 8)].greedy == bench.cell(64, 8, "greedy", 10, 20261207)["fail"]
    assert set(POWER) == set(bench.SETTINGS)
