"""perf/bench_verify.py's report, at a reduced size, is one the current `qgate verify` accepts:
the bench times verification of a report that verifies, not the first check that refuses it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from qgate.report.verify.multi import verify_any_file

BENCH = Path(__file__).resolve().parents[3] / "perf" / "bench_verify.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_verify", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_bench_report_verifies_at_a_small_size(tmp_path: Path) -> None:
    bench = _bench()
    args = bench.parse_args(
        ["--items", "20", "--sequences", "3", "--tokens", "8", "--duration", "150"]
        + ["--output-tokens", "16"]
    )
    envelope, pub, profile = bench.write_signed(args, tmp_path)
    result = verify_any_file(envelope, pub, profile)
    assert result.report.verdict == "PASS"
    checked = "\n".join(result.checked)
    assert "160 item answers and correctness re-derived" in checked  # 4 suites x 2 sides x 20
    assert "80 math items match the math set" in checked
    assert "24 divergence positions re-derived" in checked
    assert "perf records hold every scenario run" in checked
    assert "overall verdict PASS follows" in checked
    series = result.report.perf.results[0].candidate
    assert series is not None and len(series["time_series"]["buckets"]) >= 2
