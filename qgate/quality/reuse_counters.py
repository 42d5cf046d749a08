"""The server counters a reuse pass records, scraped from the Prometheus `/metrics` endpoint.

Unlike the perf stage's scrape (qgate/perf/counters.py, summed over every label), the
prompt tokens are kept apart by their `source` label: computed, device prefix cache,
external/host tier. The KV capacity in tokens comes from `vllm:cache_config_info`
(num_gpu_blocks x block_size), which sizes the filler traffic of the restored and load
passes.
"""

from __future__ import annotations

from collections.abc import Mapping

from qgate.core.http import root_url
from qgate.quality.reuse_records import KV_USAGE

__all__ = ["kv_capacity_tokens", "parse_pass_counters", "scrape_text"]

_KEPT = (
    "vllm:prompt_tokens_total",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:external_prefix_cache_queries_total",
    "vllm:external_prefix_cache_hits_total",
    "vllm:num_preemptions_total",
)
_BY_SOURCE = ("vllm:prompt_tokens_by_source_total", "vllm:prompt_tokens_cached_by_source_total")


def parse_pass_counters(text: str) -> dict[str, float]:
    """The counters a pass records (summed over engines and models), and the KV usage gauge."""
    from prometheus_client.parser import text_string_to_metric_families  # deferred: core/lazy.py

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key: str | None = None
            if s.name in _KEPT or s.name.startswith("vllm:kv_offload_"):
                key = s.name if not s.name.endswith(("_bucket", "_created")) else None
            elif s.name in _BY_SOURCE and "source" in s.labels:
                key = f'{s.name}{{source="{s.labels["source"]}"}}'
            elif s.name == KV_USAGE:
                key = s.name
            if key is not None:
                out[key] = out.get(key, 0.0) + float(s.value)
    return out


def kv_capacity_tokens(text: str) -> int | None:
    """Tokens the KV cache holds: num_gpu_blocks x block_size of `vllm:cache_config_info`."""
    from prometheus_client.parser import text_string_to_metric_families  # deferred: core/lazy.py

    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "vllm:cache_config_info":
                blocks, size = s.labels.get("num_gpu_blocks"), s.labels.get("block_size")
                if blocks and size and blocks.isdigit() and size.isdigit():
                    return int(blocks) * int(size)
    return None


async def scrape_text(base_url: str, headers: Mapping[str, str] | None = None) -> str:
    """The `/metrics` text of a server ('' when it has none or does not answer)."""
    import aiohttp  # deferred (qgate/core/lazy.py): verify reads this module, never scrapes

    try:
        timeout = aiohttp.ClientTimeout(total=10)
        async with (
            aiohttp.ClientSession(timeout=timeout) as s,
            s.get(root_url(base_url) + "/metrics", headers=dict(headers or {})) as resp,
        ):
            return await resp.text() if resp.status == 200 else ""
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return ""
