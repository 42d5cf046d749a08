"""Server counters from the Prometheus `/metrics` endpoint, scraped around each scenario.

The endpoint lives at the server root (the base URL without `/v1`). Only
monotone series are kept (counters, and histogram `_sum`/`_count`), summed
over their label sets, so that after-minus-before deltas explain a scenario:
prefix-cache hit rate, preemptions, prompt and generation tokens, and the
server's own queue time. A server without `/metrics` gives empty counters.
"""

from __future__ import annotations

from collections.abc import Mapping

from qgate.core.serving import MetricNames


def names_of(recorded: MetricNames | None) -> MetricNames:
    """The counter names a scenario's records are read with: those its engine declared, or
    vLLM's for records made before engines declared theirs (all of them came from vLLM)."""
    if recorded is not None:
        return recorded
    from qgate.runtime.vllm_server import VLLM_METRICS

    return VLLM_METRICS


def metrics_url(base_url: str) -> str:
    """`http://h:p/v1` -> `http://h:p/metrics`."""
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return root + "/metrics"


def parse_counters(text: str) -> dict[str, float]:
    """Monotone samples of a Prometheus exposition, summed over labels (buckets dropped)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.type not in ("counter", "histogram", "summary", "unknown"):
            continue
        for s in family.samples:
            if s.name.endswith("_bucket") or s.name.endswith("_created"):
                continue
            # Untyped series count only when their name says they are counters.
            if family.type == "unknown" and not s.name.endswith("_total"):
                continue
            if family.type in ("histogram", "summary") and not s.name.endswith(("_sum", "_count")):
                continue
            out[s.name] = out.get(s.name, 0.0) + float(s.value)
    return out


async def scrape(base_url: str, headers: Mapping[str, str] | None = None) -> dict[str, float]:
    """Fetch and parse `/metrics`; an endpoint without it (or unparsable) gives {}."""
    import aiohttp

    try:
        timeout = aiohttp.ClientTimeout(total=10)
        async with (
            aiohttp.ClientSession(timeout=timeout) as s,
            s.get(metrics_url(base_url), headers=dict(headers or {})) as resp,
        ):
            if resp.status != 200:
                return {}
            return parse_counters(await resp.text())
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return {}


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
