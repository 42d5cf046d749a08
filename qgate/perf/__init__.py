"""Perf stage: streaming load generator, workloads, metrics, server counters.

Entry points (the surface below is loaded lazily: importing `qgate.perf` imports
none of it):

- `run_scenarios(base_url, model, spec, role, *, gpus, headers, probes,
  probe_params, progress, timeout_s) -> list[ScenarioRun]` (async) measures.
- `summarize(run, slo) -> ScenarioMetrics`, `compare(reference, candidate, *, resamples,
  seed) -> list[MetricComparison]` and `probe_agreement(run)` are pure; `qgate verify`
  recomputes them from the records. The perf gates (`scenario_verdicts`,
  `evaluate_perf_gates`, the probe and turn gates) are in `qgate.gates`. The summary of a run
  whose params carry `series_bucket_s` (duration-bound scenarios) holds its
  per-bucket time series (`bucket_series`, via `metrics.time_series(run)`).
- `RequestRecord`, `ScenarioRun`: the raw records; `ScenarioMetrics`,
  `MetricComparison`: what is derived from them.
- `qgate perf` (UNGATED, against an endpoint) is `qgate/cli/perf.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgate.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from qgate.perf.compare import MetricComparison, compare
    from qgate.perf.metrics import summarize
    from qgate.perf.probes import probe_agreement
    from qgate.perf.records import RequestRecord, ScenarioRun
    from qgate.perf.runner import run_scenarios
    from qgate.perf.series import bucket_series
    from qgate.perf.summaries import ScenarioMetrics

__all__ = [
    "MetricComparison",
    "RequestRecord",
    "ScenarioMetrics",
    "ScenarioRun",
    "bucket_series",
    "compare",
    "probe_agreement",
    "run_scenarios",
    "summarize",
]

_HOME = {
    "MetricComparison": "compare",
    "compare": "compare",
    "ScenarioMetrics": "summaries",
    "summarize": "metrics",
    "probe_agreement": "probes",
    "RequestRecord": "records",
    "ScenarioRun": "records",
    "run_scenarios": "runner",
    "bucket_series": "series",
}

__getattr__ = lazy_getattr(__name__, _HOME)
