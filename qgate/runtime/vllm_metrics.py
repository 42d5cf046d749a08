"""vLLM's Prometheus counter names: what qgate reads from a vLLM server's `/metrics`.

Its own module (the engine's class, qgate/runtime/vllm_server.py, declares them) so
that reading old perf records, whose engine declared none, needs no runtime.
"""

from __future__ import annotations

from qgate.core.serving import MetricNames

__all__ = ["VLLM_METRICS"]

VLLM_METRICS = MetricNames(
    prefix_hits="vllm:prefix_cache_hits_total",
    prefix_queries="vllm:prefix_cache_queries_total",
    preemptions="vllm:num_preemptions_total",
    prompt_tokens="vllm:prompt_tokens_total",
    generation_tokens="vllm:generation_tokens_total",
)
