from __future__ import annotations

import asyncio
import socket

from qgate.core.serving import MetricNames
from qgate.perf.counters import deltas, names_of, prefix_cache_hit_rate
from qgate.perf.scrape import metrics_url, parse_counters, scrape
from qgate.runtime.vllm_metrics import VLLM_METRICS

TEXT = """# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 250.0
# HELP vllm:num_requests_running Running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# HELP vllm:e2e_request_latency_seconds Latency.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="1.0",model_name="m"} 2.0
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 3.0
vllm:e2e_request_latency_seconds_sum{model_name="m"} 4.5
vllm:e2e_request_latency_seconds_count{model_name="m"} 3.0
"""


def test_parse_keeps_counters_and_histogram_sums_only() -> None:
    c = parse_counters(TEXT)
    assert c["vllm:prefix_cache_queries_total"] == 1000.0
    assert c["vllm:e2e_request_latency_seconds_count"] == 3.0
    assert "vllm:num_requests_running" not in c
    assert not any(k.endswith("_bucket") for k in c)


def test_hit_rate_from_deltas() -> None:
    before = {"vllm:prefix_cache_queries_total": 1000.0, "vllm:prefix_cache_hits_total": 250.0}
    after = {"vllm:prefix_cache_queries_total": 1400.0, "vllm:prefix_cache_hits_total": 550.0}
    assert deltas(before, after)["vllm:prefix_cache_hits_total"] == 300.0
    assert prefix_cache_hit_rate(before, after, VLLM_METRICS) == 0.75
    assert prefix_cache_hit_rate({}, {}, VLLM_METRICS) is None


def test_the_engines_declared_names_are_the_ones_read() -> None:
    mine = MetricNames(prefix_hits="x:hits_total", prefix_queries="x:queries_total")
    before = {"x:queries_total": 10.0, "x:hits_total": 0.0, "vllm:prefix_cache_queries_total": 5}
    after = {"x:queries_total": 30.0, "x:hits_total": 5.0, "vllm:prefix_cache_queries_total": 9}
    assert prefix_cache_hit_rate(before, after, mine) == 0.25
    # an engine that declares no prefix-cache counters has no hit rate, whatever else it serves
    assert prefix_cache_hit_rate(before, after, MetricNames(prompt_tokens="x:p")) is None
    # records made before engines declared names were vLLM's
    assert names_of(None) == VLLM_METRICS and names_of(mine) is mine


def test_metrics_url_is_the_server_root() -> None:
    assert metrics_url("http://h:1/v1") == "http://h:1/metrics"
    assert metrics_url("http://h:1/v1/") == "http://h:1/metrics"


def test_endpoint_without_metrics_gives_empty_counters() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    assert asyncio.run(scrape(f"http://127.0.0.1:{port}/v1")) == {}
