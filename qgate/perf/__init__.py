"""Perf stage: streaming load generator, workloads, metrics, server counters.

Entry points:

- `runner.run_scenarios(base_url, model, spec, role, *, gpus, headers, probes,
  probe_params, progress, timeout_s) -> list[ScenarioRun]` (async) measures.
- `metrics.summarize(run, slo) -> ScenarioMetrics`, `checks.scenario_verdicts(spec, run)
  -> list[Verdict]`, `compare.compare(reference, candidate, *, resamples, seed)
  -> list[MetricComparison]` and `probes.probe_agreement(run)` are pure; `qgate verify`
  recomputes them from the records. The summary of a run whose params carry
  `series_bucket_s` (duration-bound scenarios) holds its per-bucket time series
  (`series.bucket_series`, via `metrics.time_series(run)`).
- `commands.perf` is `qgate perf` (UNGATED, against an endpoint).
"""
