"""Plain-text tables of perf metrics and comparisons (for the CLI and the Markdown report)."""

from __future__ import annotations

from collections.abc import Sequence

from qgate.perf.compare import MetricComparison
from qgate.perf.summaries import ScenarioMetrics

QUEUE_SHOWN_MS = 0.05  # client queueing below this is not shown


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(
        c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
    )


def _grid(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [_row(head, widths), _row(["-" * w for w in widths], widths)]
    return "\n".join(lines + [_row(r, widths) for r in rows])


def metrics_table(ms: Sequence[ScenarioMetrics]) -> str:
    """One row per scenario run: counts, latencies, throughputs, per-request rates.

    err/chk: requests that failed (transport, HTTP, stream) / completed requests whose
    stream failed its check; a scenario marked `*` has the latter in its figures.
    """
    head = [
        "scenario",
        "role",
        "ok/n",
        "err/chk",
        "TTFT p50/p90/p99 ms",
        "TPOT p50/p99 ms",
        "ITL p50/p99 ms",
        "E2E p50/p99 ms",
        "out tok/s",
        "/GPU",
        "req/s",
        "req out tok/s p50",
        "decode tok/s p50",
        "goodput",
        "prefix hit",
        "probes",
    ]
    rows = []
    for m in ms:
        good = "-" if m.request_goodput is None else f"{m.request_goodput:.3f}"
        hit = "-" if m.prefix_cache_hit_rate is None else f"{m.prefix_cache_hit_rate:.1%}"
        probes = f"{m.probe_agree}/{m.probe_total}" if m.probe_total else "-"
        rows.append(
            [
                m.scenario + ("*" if m.check_failed else ""),
                m.role,
                f"{m.completed}/{m.requests}",
                f"{m.failed}/{m.check_failed}",
                f"{m.ttft_ms.p50:.1f}/{m.ttft_ms.p90:.1f}/{m.ttft_ms.p99:.1f}",
                f"{m.tpot_ms.p50:.1f}/{m.tpot_ms.p99:.1f}",
                f"{m.itl_ms.p50:.1f}/{m.itl_ms.p99:.1f}",
                f"{m.e2e_ms.p50:.0f}/{m.e2e_ms.p99:.0f}",
                f"{m.output_throughput:.2f}",
                f"{m.output_throughput_per_gpu:.2f}",
                f"{m.request_throughput:.3f}",
                f"{m.request_output_tok_s.p50:.2f}",
                f"{m.request_decode_tok_s.p50:.2f}",
                good,
                hit,
                probes,
            ]
        )
    if any(m.queue_ms.p99 >= QUEUE_SHOWN_MS for m in ms):
        # Outside TTFT: time from when the workload wanted a request sent to its write,
        # connection set-up included. Large values: the client limited the offered load.
        head.append("queue p50/p99 ms")
        for m, row in zip(ms, rows, strict=True):
            row.append(f"{m.queue_ms.p50:.2f}/{m.queue_ms.p99:.2f}")
    return _grid(head, rows)


def comparison_table(cs: Sequence[MetricComparison]) -> str:
    """One row per metric: reference, candidate, ratio and its bootstrap 95% interval."""
    head = ["scenario", "metric", "reference", "candidate", "ratio", "95% CI", "better"]

    def f(x: float | None, spec: str = ".3g") -> str:
        return "-" if x is None else format(x, spec)

    rows = [
        [
            c.scenario,
            c.metric,
            f(c.reference),
            f(c.candidate),
            f(c.ratio, ".3f"),
            "-" if c.ci_low is None else f"[{c.ci_low:.3f}, {f(c.ci_high, '.3f')}]",
            c.better,
        ]
        for c in cs
    ]
    return _grid(head, rows)


def series_table(m: ScenarioMetrics) -> str | None:
    """One row per time bucket of a run with a series (qgate.perf.series), else None."""
    if m.time_series is None or not m.time_series.buckets:
        return None
    width = m.time_series.bucket_s
    head = ["from s", "s", "out tok/s", "req ok/err", "TTFT p50/p90 ms"]
    rows = [
        [
            f"{b.start_s:g}",
            f"{b.seconds:.3g}",
            f"{b.output_throughput:.2f}",
            f"{b.completed}/{b.failed}",
            "-" if b.ttft_p50_ms is None else f"{b.ttft_p50_ms:.1f}/{b.ttft_p90_ms or 0:.1f}",
        ]
        for b in m.time_series.buckets
    ]
    return f"{m.scenario} ({m.role}), {width:g} s buckets:\n" + _grid(head, rows)
