"""Client queueing shows in the report's latency table only when it is not negligible."""

from __future__ import annotations

from typing import Any

from qgate.perf.summaries import ScenarioMetrics
from qgate.perf.table import metrics_table
from qgate.report.render.perf_view import distribution_rows


def dist(p: float) -> dict[str, Any]:
    return {"count": 10, "mean": p, "std": 0.0, "p50": p, "p90": p, "p99": p, "max": p}


def summary(queue_p: float) -> dict[str, Any]:
    return {"ttft_ms": dist(50.0), "queue_ms": dist(queue_p)}


def test_queue_row_only_when_non_zero() -> None:
    rows = distribution_rows(summary(0.0), summary(0.001))
    assert [r[0] for r in rows] == ["ttft_ms"]
    rows = distribution_rows(summary(0.0), summary(12.5))
    assert rows[-1] == ["queue_ms (client)", "0", "0", "0", "12.5", "12.5", "12.5"]
    # Old reports' summaries (or a missing reference) leave dashes, not errors.
    rows = distribution_rows(None, summary(3.0))
    assert rows[-1][:4] == ["queue_ms (client)", "–", "–", "–"]


def metrics(check_failed: int, queue_p: float) -> ScenarioMetrics:
    d = dist(1.0)
    return ScenarioMetrics.model_validate(
        {
            "scenario": "s",
            "role": "standalone",
            "requests": 10,
            "completed": 10,
            "failed": 0,
            "check_failed": check_failed,
            "duration_s": 1.0,
            "total_input_tokens": 1,
            "total_output_tokens": 1,
            "request_throughput": 1.0,
            "request_goodput": None,
            "output_throughput": 1.0,
            "output_throughput_per_gpu": 1.0,
            "total_token_throughput": 1.0,
            "ttft_ms": d,
            "tpot_ms": d,
            "itl_ms": d,
            "e2e_ms": d,
            "queue_ms": dist(queue_p),
            "request_output_tok_s": d,
            "request_decode_tok_s": d,
            "peak_concurrency": 1,
            "max_output_tokens_per_s": 1.0,
        }
    )


def test_cli_table_marks_check_failures_and_shows_queueing() -> None:
    clean = metrics_table([metrics(0, 0.0)])
    assert "s*" not in clean and "queue" not in clean
    marked = metrics_table([metrics(2, 4.0)])
    assert "s*" in marked and "0/2" in marked and "4.00/4.00" in marked
