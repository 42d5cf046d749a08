"""Scraping a server's Prometheus `/metrics` (at its root: the base URL without `/v1`).

Only monotone series are kept (counters, and histogram `_sum`/`_count`), summed over
their label sets; qgate/perf/counters.py reads the after-minus-before deltas. The prompt
tokens by source (`BY_SOURCE`: computed, device prefix cache, host or external tier) are also
kept apart, as `name{source="..."}`, for the cache provenance (qgate/perf/cache_sources.py).
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from qgate.perf.counters import BY_SOURCE, source_key

__all__ = ["metrics_url", "parse_counters", "scrape"]


def metrics_url(base_url: str) -> str:
    """`http://h:p/v1` -> `http://h:p/metrics`."""
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return root + "/metrics"


def parse_counters(text: str) -> dict[str, float]:
    """Monotone samples of a Prometheus exposition, summed over labels (buckets dropped)."""
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
            if s.name == BY_SOURCE and "source" in s.labels:
                key = source_key(s.labels["source"])
                out[key] = out.get(key, 0.0) + float(s.value)
    return out


async def scrape(base_url: str, headers: Mapping[str, str] | None = None) -> dict[str, float]:
    """Fetch and parse `/metrics`; an endpoint without it (or unparsable) gives {}."""
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
