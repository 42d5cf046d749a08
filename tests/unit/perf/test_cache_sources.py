"""Cache provenance: cached tokens split by who could have written them, counters by source."""

from __future__ import annotations

from typing import Any

from qgate.perf.cache_sources import cache_sources
from qgate.perf.counters import source_key
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.perf.scrape import parse_counters


def req(i: int, prompt: int, cached: int | None, out: int = 4, **kw: Any) -> RequestRecord:
    return RequestRecord(
        index=i,
        scheduled_ns=0,
        sent_ns=0,
        first_token_ns=1,
        done_ns=2,
        prompt_tokens=prompt,
        output_tokens=out,
        cached_prompt_tokens=cached,
        **kw,
    )


def run(kind: str, requests: list[RequestRecord], **params: Any) -> ScenarioRun:
    return ScenarioRun(
        scenario="s",
        role="candidate",
        kind=kind,
        params=params,
        gpus=1,
        duration_ns=1,
        requests=requests,
    )


def test_multi_turn_hits_split_into_shared_prefix_own_history_and_unexplained() -> None:
    # shared prefix 32; turn 1's history is turn 0's 40 prompt + 4 answer tokens = 44
    requests = [
        req(0, 40, 32, conversation=0, turn=0),  # the shared prefix: across conversations
        req(1, 40, 48, conversation=1, turn=0),  # 16 past the prefix nobody here wrote
        req(2, 60, 44, conversation=0, turn=1),  # 32 prefix + 12 its own history
        req(3, 60, 60, conversation=0, turn=2),  # turn 1's 60 + 4 = 64 own: all explained
        req(4, 10, 5, probe_id="q1"),  # a probe: not the workload's
    ]
    got = cache_sources([run("multi_turn", requests, shared_prefix_tokens=32)])
    assert got is not None
    assert (got.requests, got.prompt_tokens, got.detailed) == (4, 200, 4)
    assert got.across_conversations == 32 + 32 + 32 + 32
    assert got.within_conversation == 12 + 28
    assert got.unexplained == 16
    assert not got.salted and got.device_cache is None


def test_a_workload_sharing_no_context_explains_no_hit_and_counters_sum_over_blocks() -> None:
    hit = source_key("local_cache_hit")
    comp = source_key("local_compute")
    blocks = [
        run(
            "fixed",
            [req(0, 64, 0), req(1, 64, 64)],
            cache_salt="qgate-candidate-r0-b0",
        ).model_copy(
            update={
                "counters_before": {hit: 10.0, comp: 5.0},
                "counters_after": {hit: 74.0, comp: 69.0},
            }
        )
        for _ in range(2)
    ]
    got = cache_sources(blocks)
    assert got is not None
    assert got.unexplained == 128 and got.within_conversation == 0
    assert (got.device_cache, got.computed, got.external_tier) == (128, 128, None)
    assert got.salted


def test_without_per_request_details_only_the_counters_speak() -> None:
    got = cache_sources([run("multi_turn", [req(0, 40, None, conversation=0, turn=0)])])
    assert got is not None and got.detailed == 0
    assert (got.within_conversation, got.across_conversations, got.unexplained) == (None,) * 3


def test_the_scrape_keeps_prompt_tokens_by_source_apart() -> None:
    text = (
        "# TYPE vllm:prompt_tokens_by_source_total counter\n"
        'vllm:prompt_tokens_by_source_total{engine="0",source="local_compute"} 30.0\n'
        'vllm:prompt_tokens_by_source_total{engine="0",source="local_cache_hit"} 12.0\n'
        'vllm:prompt_tokens_by_source_total{engine="1",source="local_cache_hit"} 4.0\n'
    )
    got = parse_counters(text)
    assert got["vllm:prompt_tokens_by_source_total"] == 46.0
    assert got[source_key("local_cache_hit")] == 16.0
    assert got[source_key("local_compute")] == 30.0
