"""The figures derived from a perf run, as data: what `summarize` and `bucket_series` return.

Pydantic models only (the report and `qgate perf --format json` carry them); the
numbers are computed in qgate/perf/metrics.py and qgate/perf/series.py, which need
numpy, so that reading or validating a report does not import it.
"""

from __future__ import annotations

from pydantic import Field

from qgate.core.records import Record

__all__ = ["Distribution", "ScenarioMetrics", "SeriesBucket", "TimeSeries"]


class SeriesBucket(Record):
    """One time bucket of a scenario's series."""

    start_s: float = Field(description="Bucket start, seconds after the scenario's zero.")
    seconds: float = Field(
        description="Seconds the bucket covers: the width, less for the last bucket (it ends "
        "at the last completion)."
    )
    completed: int = Field(description="Requests that completed in the bucket (by done time).")
    failed: int = Field(description="Requests that ended in an error in the bucket.")
    output_tokens: int = Field(
        description="Output tokens that arrived in the bucket (completed requests, by chunk "
        "arrival)."
    )
    output_throughput: float = Field(description="output_tokens / seconds (tok/s).")
    ttft_p50_ms: float | None = Field(
        description="Median TTFT of the requests completed in the bucket; None without any."
    )
    ttft_p90_ms: float | None = Field(
        description="90th percentile TTFT (linear interpolation) of the same requests."
    )


class TimeSeries(Record):
    """Per-bucket output throughput, request counts and TTFT of one scenario run."""

    bucket_s: float = Field(description="Bucket width in seconds.")
    buckets: list[SeriesBucket] = Field(description="Buckets in time order, empty ones kept.")


class Distribution(Record):
    """Summary of one latency metric over the measured requests, in milliseconds."""

    count: int = Field(description="Number of values summarized.")
    mean: float = Field(description="Arithmetic mean (0 when empty, as vLLM).")
    std: float = Field(description="Population standard deviation (ddof=0).")
    p50: float = Field(description="Median.")
    p90: float = Field(description="90th percentile (linear interpolation).")
    p99: float = Field(description="99th percentile (linear interpolation).")
    max: float = Field(description="Largest value.")


class ScenarioMetrics(Record):
    """Everything the perf table shows for one scenario on one runtime."""

    scenario: str = Field(description="Scenario name (with '@cN' for a sweep level).")
    role: str = Field(description="reference | candidate.")
    requests: int = Field(description="Measured workload requests (probes excluded).")
    completed: int = Field(description="Requests with no transport/HTTP error and a first token.")
    failed: int = Field(description="Requests that ended in an error.")
    check_failed: int = Field(description="Completed requests with stream-check failures.")
    duration_s: float = Field(description="Measured window in seconds.")
    total_input_tokens: int = Field(description="Prompt tokens of completed requests (usage).")
    total_output_tokens: int = Field(description="Output tokens of completed requests (usage).")
    request_throughput: float = Field(description="Completed requests per second.")
    request_goodput: float | None = Field(
        description="Completed requests per second that met every SLO; None without SLOs."
    )
    output_throughput: float = Field(description="Output tokens per second.")
    output_throughput_per_gpu: float = Field(description="Output tokens per second per GPU.")
    total_token_throughput: float = Field(description="(Input + output) tokens per second.")
    ttft_ms: Distribution = Field(description="Time to first token.")
    tpot_ms: Distribution = Field(description="Time per output token after the first.")
    itl_ms: Distribution = Field(description="Inter-token latency, every gap pooled.")
    e2e_ms: Distribution = Field(description="End-to-end request latency.")
    request_output_tok_s: Distribution = Field(
        description="Per request: output tokens / E2E, the full-request output rate (tok/s)."
    )
    request_decode_tok_s: Distribution = Field(
        description="Per request: output tokens after the first / (E2E - TTFT), the decode "
        "rate once the first token is out (tok/s)."
    )
    queue_ms: Distribution = Field(
        description="Client-side queueing (sent minus scheduled); large values mean the "
        "client, not the server, limited the offered load."
    )
    peak_concurrency: int = Field(description="Most requests in flight at one instant.")
    max_output_tokens_per_s: float = Field(
        description="Largest output-token count in any one-second bucket (vLLM's definition)."
    )
    prefix_cache_hit_rate: float | None = Field(
        default=None, description="Prefix-cache hits / queries from the /metrics deltas."
    )
    preemptions: float | None = Field(
        default=None, description="Server preemptions during the scenario (/metrics delta)."
    )
    server_counters: dict[str, float] = Field(
        default_factory=dict,
        description="Every /metrics counter's delta over the scenario (tokens, queue time sums, "
        "cache queries...), to explain the figures above.",
    )
    probe_agree: int = Field(default=0, description="Quality probes answered as in quality stage.")
    probe_total: int = Field(default=0, description="Quality probes sent.")
    time_series: TimeSeries | None = Field(
        default=None,
        description="Output tok/s, requests and TTFT p50/p90 per time bucket "
        "(qgate.perf.series), for runs that ask for one (duration-bound scenarios do).",
    )
