"""Perf stage: streaming load generator, workloads, metrics, server counters."""
