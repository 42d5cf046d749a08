"""Server counters from the Prometheus `/metrics` endpoint, scraped around each scenario.

The endpoint lives at the server root (the base URL without `/v1`). Only
monotone series are kept (counters, and histogram `_sum`/`_count`), summed
over their label sets, so that after-minus-before deltas explain a scenario:
prefix-cache hit rate, preemptions, prompt and generation tokens, and the
server's own queue time. A server without `/metrics` gives empty counters.
Scraping them is qgate/perf/scrape.py; this module reads the records (pure).
"""

from __future__ import annotations

from collections.abc import Mapping

from qgate.core.serving import MetricNames
from qgate.runtime.vllm_metrics import VLLM_METRICS

BY_SOURCE = "vllm:prompt_tokens_by_source_total"  # vLLM's prompt tokens, by `source` label
SOURCES = ("local_compute", "local_cache_hit", "external_kv_transfer")


def source_key(source: str) -> str:
    """The counter key of one source's prompt tokens, as the scrape keeps them apart."""
    return f'{BY_SOURCE}{{source="{source}"}}'


def names_of(recorded: MetricNames | None) -> MetricNames:
    """The counter names a scenario's records are read with: those its engine declared, or
    vLLM's for records made before engines declared theirs (all of them came from vLLM)."""
    if recorded is not None:
        return recorded
    return VLLM_METRICS


def deltas(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """after - before for every series present after (a reset server gives its raw value)."""
    out: dict[str, float] = {}
    for k, v in after.items():
        d = v - before.get(k, 0.0)
        out[k] = v if d < 0 else d
    return out


def prefix_cache_hit_rate(
    before: Mapping[str, float], after: Mapping[str, float], names: MetricNames
) -> float | None:
    """Prefix-cache hits / queries (in tokens) during the scenario; None if not reported."""
    if names.prefix_queries is None:
        return None
    d = deltas(before, after)
    q = d.get(names.prefix_queries)
    if not q:
        return None
    return d.get(names.prefix_hits or "", 0.0) / q
