"""Raw per-request records of the perf stage and the results computed from them.

Summary figures (percentiles, throughputs, ratios) are pure functions of the
request records so that `qgate verify` can recompute them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from qgate.core.records import Record
from qgate.core.serving import MetricNames

# A perf run is one of the two runtimes of `qgate run`, or `qgate perf` on its own.
PerfRole = Literal["reference", "candidate", "standalone"]


class RequestRecord(Record):
    """One measured request, timed on the client's monotonic clock (ns since scenario start)."""

    index: int = Field(description="Order of submission within the scenario.")
    conversation: int | None = Field(default=None, description="Multi-turn: conversation index.")
    turn: int | None = Field(default=None, description="Multi-turn: turn index.")
    concurrency: int | None = Field(default=None, description="Sweep level this request ran at.")
    probe_id: str | None = Field(default=None, description="Quality probe item id, if a probe.")
    scheduled_ns: int = Field(description="When the workload wanted it sent.")
    sent_ns: int = Field(description="When the request left the client (after client queueing).")
    first_token_ns: int | None = Field(description="First content token received.")
    done_ns: int = Field(description="Last byte received (or failure).")
    token_times_ns: list[int] = Field(
        default_factory=list, description="Arrival time of every content chunk."
    )
    chunk_tokens: list[int] | None = Field(
        default=None,
        description="Tokens in each content chunk, when the server reports token ids "
        "(a busy server may put several tokens in one chunk).",
    )
    prompt_tokens: int | None = Field(default=None, description="Server usage: prompt tokens.")
    output_tokens: int | None = Field(default=None, description="Server usage: completion tokens.")
    requested_output_tokens: int | None = Field(
        default=None, description="Forced output length (ignore_eos+min_tokens), if forced."
    )
    cached_prompt_tokens: int | None = Field(
        default=None, description="Prompt tokens served from the prefix cache, if reported."
    )
    error: str | None = Field(default=None, description="Transport/HTTP/stream error, if any.")
    check_failures: list[str] = Field(
        default_factory=list, description="Stream verification failures for this request."
    )
    probe_answer: str | None = Field(default=None, description="Probe: extracted answer.")
    probe_expected: str | None = Field(
        default=None,
        description="Probe: the same runtime's answer to this item in the quality stage.",
    )
    text: str | None = Field(
        default=None, description="Probe: the generated text (workload outputs are not kept)."
    )
    probe_truth: str | None = Field(
        default=None,
        description="Probe: the item's known correct answer, which grades it (None in records "
        "made before graded probes).",
    )
    probe_correct: bool | None = Field(
        default=None,
        description="Probe: its extracted answer equals probe_truth (no number: wrong); "
        "`qgate verify` re-grades it from `text`.",
    )
    connect_ns: int | None = Field(
        default=None,
        description="Time spent opening a new connection for this request, before sent_ns "
        "(so inside sent_ns - scheduled_ns, never inside TTFT); None when a kept-alive "
        "connection was reused or the record predates this field.",
    )
    response_id: str | None = Field(
        default=None,
        description="The server's id for the response (the stream's `id`), to match a record "
        "with the server's own logs.",
    )
    graded_turn: str | None = Field(
        default=None,
        description="Graded session turn ('s<session>.t<turn>', qgate/perf/sessions.py), if "
        "one: its text, truth (`probe_truth`) and grade are kept as a probe's are, and it is "
        "left out of the perf figures (perf derivation 9).",
    )


def is_workload(r: RequestRecord) -> bool:
    """A request of the scenario's workload: neither a quality probe nor a graded turn."""
    return r.probe_id is None and r.graded_turn is None


class ScenarioRun(Record):
    """One scenario (one concurrency level of a sweep) on one runtime."""

    scenario: str = Field(description="Scenario name (with '@cN' for a sweep level).")
    role: PerfRole = Field(
        description="Which runtime served it; standalone: `qgate perf` against an endpoint."
    )
    kind: str = Field(description="fixed | multi_turn | trace.")
    params: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict, description="Workload parameters as run."
    )
    gpus: int = Field(description="Accelerators the runtime used (for per-GPU throughput).")
    duration_ns: int = Field(description="Measured window: first send to last completion.")
    requests: list[RequestRecord] = Field(description="Measured requests (warmups excluded).")
    counters_before: dict[str, float] = Field(default_factory=dict, description="/metrics.")
    counters_after: dict[str, float] = Field(default_factory=dict, description="/metrics.")
    metric_names: MetricNames | None = Field(
        default=None,
        description="The counter names the serving engine declared (its class's `metrics`); "
        "None in records made before engines declared them (vLLM's names apply).",
    )
    t0_unix_ns: int | None = Field(
        default=None,
        description="Wall-clock time (ns since the Unix epoch) of the scenario's zero, the "
        "monotonic instant every *_ns time above counts from; None in older records.",
    )
    block: int = Field(
        default=0,
        ge=0,
        description="Which perf block of its side this run is (0-based): side-by-side runs "
        "interleave blocks, reference then candidate (perf.blocks).",
    )
    round: int = Field(
        default=0,
        ge=0,
        description="Which perf round this run is (0-based): round 0 is the run's own perf; "
        "each later round measures both sides again in fresh server lives (perf.rounds).",
    )


class MetricComparison(Record):
    """One metric on both runtimes and their ratio."""

    scenario: str = Field(description="Scenario name.")
    metric: str = Field(description="e.g. 'ttft_ms.p50', 'output_throughput'.")
    unit: str = Field(description="ms, tok/s, req/s.")
    better: Literal["lower", "higher"] = Field(description="Which direction is an improvement.")
    reference: float | None = Field(description="Reference value (median, or aggregate).")
    candidate: float | None = Field(description="Candidate value (median, or aggregate).")
    ratio: float | None = Field(
        description="candidate / reference; None if not computable. With rounds > 1 (perf "
        "derivation 7): exp(mean of the round log ratios), the across-round interval's centre."
    )
    ci_low: float | None = Field(
        description="Bootstrap 2.5th percentile of the ratio (widened by the block spread; "
        "with rounds > 1 the across-round interval's lower end)."
    )
    ci_high: float | None = Field(description="Bootstrap 97.5th percentile of the ratio.")
    resamples: int = Field(description="Bootstrap resamples (0 for aggregate metrics).")
    seed: int = Field(description="Seed of the bootstrap generator.")
    blocks: int = Field(
        default=1,
        description="Block pairs behind the figures (perf.blocks; over every round when rounds "
        "> 1, 1 when each life ran one block).",
    )
    block_ratios: list[float | None] = Field(
        default_factory=list,
        description="candidate / reference in each block pair (blocks > 1), round by round.",
    )
    block_ci_low: float | None = Field(
        default=None,
        description="Lower end of the between-block 95% interval of the ratio (normal "
        "quantile, qgate/perf/blocks.py).",
    )
    block_ci_high: float | None = Field(
        default=None, description="Upper end of the between-block 95% interval of the ratio."
    )
    rounds: int = Field(
        default=1, description="Rounds of fresh lives behind the figures (perf.rounds)."
    )
    round_ratios: list[float | None] = Field(
        default_factory=list,
        description="candidate / reference in each round, its blocks pooled (rounds > 1).",
    )
    round_ci_low: float | None = Field(
        default=None,
        description="Lower end of the across-round 95% interval of the ratio (Student's t "
        "over the round ratios, the ABBA order fitted from 4 rounds; the normal quantile "
        "before perf derivation 7; qgate/perf/round_interval.py).",
    )
    round_ci_high: float | None = Field(
        default=None, description="Upper end of the across-round 95% interval of the ratio."
    )
