from __future__ import annotations

import pytest

from qgate.perf.metrics import (
    distribution,
    itl_gaps_ms,
    itls_ms,
    max_tokens_per_second,
    peak_concurrency,
    summarize,
)
from qgate.perf.records import RequestRecord, ScenarioRun
from qgate.profile import Slo

MS = 1_000_000


def rec(index: int, sent: int, times: list[int], n: int | None, **kw: object) -> RequestRecord:
    ns = [t * MS for t in times]
    return RequestRecord(
        index=index,
        scheduled_ns=sent * MS,
        sent_ns=sent * MS,
        first_token_ns=ns[0] if ns else None,
        done_ns=(times[-1] + 1) * MS if times else (sent + 10) * MS,
        token_times_ns=ns,
        prompt_tokens=10,
        output_tokens=n,
        **kw,  # type: ignore[arg-type]
    )


def run_of(*reqs: RequestRecord, gpus: int = 1) -> ScenarioRun:
    return ScenarioRun(
        scenario="s",
        role="candidate",
        kind="fixed",
        gpus=gpus,
        duration_ns=1000 * MS,
        requests=list(reqs),
    )


R1 = rec(0, 0, [100, 110, 130], 3)
R2 = rec(1, 50, [250, 260, 270, 280], 4)
R3 = rec(2, 300, [], None, error="HTTP 500: boom")


def test_latencies_match_hand_computed_values() -> None:
    m = summarize(run_of(R1, R2, R3), None)
    assert (m.requests, m.completed, m.failed) == (3, 2, 1)
    assert m.ttft_ms.mean == pytest.approx(150.0)
    assert m.ttft_ms.std == pytest.approx(50.0)
    assert m.ttft_ms.p90 == pytest.approx(190.0)
    assert m.ttft_ms.p99 == pytest.approx(199.0)
    # TPOT = (E2E - TTFT) / (n - 1): (130-100)/2 and (230-200)/3
    assert m.tpot_ms.max == pytest.approx(15.0)
    assert m.tpot_ms.p50 == pytest.approx(12.5)
    assert m.tpot_ms.mean == pytest.approx(12.5)
    assert m.e2e_ms.mean == pytest.approx((130 + 230) / 2)
    # ITL pooled: [10, 20] + [10, 10, 10]
    assert m.itl_ms.count == 5
    assert m.itl_ms.mean == pytest.approx(12.0)
    assert m.itl_ms.p50 == pytest.approx(10.0)
    assert m.itl_ms.p90 == pytest.approx(16.0)


def test_throughputs_and_per_gpu() -> None:
    m = summarize(run_of(R1, R2, R3, gpus=2), None)
    assert m.duration_s == pytest.approx(1.0)
    assert m.total_output_tokens == 7
    assert m.output_throughput == pytest.approx(7.0)
    assert m.output_throughput_per_gpu == pytest.approx(3.5)
    assert m.total_token_throughput == pytest.approx(27.0)
    assert m.request_throughput == pytest.approx(2.0)
    assert m.request_goodput is None


@pytest.mark.parametrize(
    ("slo", "good"),
    [
        (Slo(ttft_ms=150), 1.0),
        (Slo(tpot_ms=12), 1.0),
        (Slo(e2e_ms=500), 2.0),
        (Slo(ttft_ms=50), 0.0),
    ],
)
def test_goodput_counts_requests_meeting_every_slo(slo: Slo, good: float) -> None:
    assert summarize(run_of(R1, R2, R3), slo).request_goodput == pytest.approx(good)


def test_client_queueing_is_not_part_of_ttft() -> None:
    r = R1.model_copy(update={"scheduled_ns": -40 * MS})
    m = summarize(run_of(r), None)
    assert m.ttft_ms.p50 == pytest.approx(100.0)
    assert m.queue_ms.p50 == pytest.approx(40.0)


def test_probes_are_left_out_of_workload_metrics() -> None:
    probe = rec(3, 0, [5000], 1, probe_id="m1", probe_answer="4", probe_expected="4")
    m = summarize(run_of(R1, probe), None)
    assert m.requests == 1
    assert m.ttft_ms.max == pytest.approx(100.0)
    assert (m.probe_agree, m.probe_total) == (1, 1)


def test_peak_concurrency_uses_exact_intervals() -> None:
    assert peak_concurrency([R1, R2, R3]) == 2
    assert peak_concurrency([]) == 0


def test_empty_distribution_is_zero_like_vllm() -> None:
    d = distribution([])
    assert d.count == 0 and d.mean == 0.0 and d.p99 == 0.0


def test_counter_deltas_explain_the_run() -> None:
    run = run_of(R1).model_copy(
        update={
            "counters_before": {
                "vllm:num_preemptions_total": 2.0,
                "vllm:prefix_cache_queries_total": 100.0,
                "vllm:prefix_cache_hits_total": 10.0,
            },
            "counters_after": {
                "vllm:num_preemptions_total": 5.0,
                "vllm:prefix_cache_queries_total": 300.0,
                "vllm:prefix_cache_hits_total": 60.0,
            },
        }
    )
    m = summarize(run, None)
    assert m.preemptions == 3.0
    assert m.prefix_cache_hit_rate == pytest.approx(0.25)
    assert m.server_counters["vllm:prefix_cache_queries_total"] == 200.0


def test_itl_gaps_are_itls_ms_of_each_request_in_order() -> None:
    reqs = [R1, R3, rec(3, 0, [7], 1), R2, rec(4, 5, [1001, 1002, 2999], 3)]
    values, counts = itl_gaps_ms(reqs)
    assert values.tolist() == [g for r in reqs for g in itls_ms(r)]  # the very same floats
    assert counts.tolist() == [2, 0, 0, 3, 2]
    assert itl_gaps_ms([])[0].size == 0
    assert itl_gaps_ms([R3])[1].tolist() == [0]


def test_max_tokens_per_second_buckets_from_the_first_send() -> None:
    # buckets from t=0: [0, 1 s) holds R1's 3 chunks and R2's 4; a late request adds 2 in [1, 2) s
    late = rec(3, 900, [1001, 1002], 2)
    assert max_tokens_per_second([R1, R2, late]) == 7.0
    assert max_tokens_per_second([late]) == 2.0
    assert max_tokens_per_second([R3]) == 0.0
    assert max_tokens_per_second([]) == 0.0


def test_request_output_and_decode_rates() -> None:
    from qgate.perf.metrics import request_decode_tok_s, request_output_tok_s

    # sent at 0, first token at 100 ms, 4 more 25 ms apart: E2E 200 ms, 5 tokens
    r = rec(0, 0, [100, 125, 150, 175, 200], 5)
    assert request_output_tok_s(r) == pytest.approx(5 / 0.2)
    assert request_decode_tok_s(r) == pytest.approx(4 / 0.1)
    one = rec(1, 0, [100], 1)
    assert request_output_tok_s(one) == pytest.approx(10.0)
    assert request_decode_tok_s(one) is None  # no token after the first
    m = summarize(run_of(r, one), None)
    assert m.request_decode_tok_s.count == 1 and m.request_decode_tok_s.p50 == pytest.approx(40.0)
    assert m.request_output_tok_s.count == 2
    assert m.request_output_tok_s.p50 == pytest.approx((25.0 + 10.0) / 2)
    assert m.ttft_ms.p90 == pytest.approx(100.0)
