from __future__ import annotations

import numpy as np
import pytest
from helpers.perf_runs import MS, run_of

from qgate.perf.compare import _Pooled, compare
from qgate.perf.records import RequestRecord, ScenarioRun

REF = run_of([100, 110, 120, 130, 140, 150], itl=10)
CAND = run_of([50, 55, 60, 65, 70, 75], itl=10)


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    a = compare(REF, CAND, resamples=300, seed=7)
    b = compare(REF, CAND, resamples=300, seed=7)
    assert a == b
    c = compare(REF, CAND, resamples=300, seed=8)
    assert [x.ci_low for x in a] != [x.ci_low for x in c]


def test_ratio_of_medians_and_interval() -> None:
    ttft = next(x for x in compare(REF, CAND, resamples=500) if x.metric == "ttft_ms.p50")
    assert ttft.reference == pytest.approx(125.0)
    assert ttft.candidate == pytest.approx(62.5)
    assert ttft.ratio == pytest.approx(0.5)
    assert ttft.ci_low is not None and ttft.ci_high is not None
    assert ttft.ci_low <= 0.5 <= ttft.ci_high
    assert ttft.ci_high < 1.0


def test_same_run_ratio_is_one() -> None:
    for x in compare(REF, REF, resamples=200):
        if x.ratio is not None:
            assert x.ratio == pytest.approx(1.0)


def _counts(idx: np.ndarray, groups: int) -> np.ndarray:
    return np.array([np.bincount(row, minlength=groups) for row in idx], dtype=np.float64)


def _expanded_median(groups: list[list[float]], drawn: np.ndarray) -> float:
    values = [v for j in drawn for v in groups[j]]
    return float(np.median(values)) if values else float("nan")


@pytest.mark.parametrize("window", ["computed", "empty", "one value"])
def test_pooled_resampled_medians_equal_numpy_on_expanded_values(window: str) -> None:
    # Ties (rounded values) and requests without values (empty lists) included;
    # a narrow or empty window sends rows through the exact fallback.
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(1, 25))
        groups = [list(np.round(rng.random(int(rng.integers(0, 5))), 1)) for _ in range(n)]
        lens = np.array([len(vs) for vs in groups], dtype=np.int64)
        p = _Pooled(np.array([v for vs in groups for v in vs], dtype=np.float64), lens)
        if window != "computed":
            p.hi = p.lo if window == "empty" else min(p.hi, p.lo + 1)
        idx = rng.integers(0, n, size=(30, n))
        got = p.resampled_medians(_counts(idx, n))
        want = np.array([_expanded_median(groups, row) for row in idx])
        assert got.shape == want.shape == (30,)
        np.testing.assert_array_equal(got, want)  # bit for bit, NaN where nothing was drawn


def test_bootstrap_does_not_depend_on_the_block_size(monkeypatch: pytest.MonkeyPatch) -> None:
    a = compare(REF, CAND, resamples=50, seed=3)
    monkeypatch.setattr("qgate.perf.compare._BLOCK", 7)  # one resample per block
    assert compare(REF, CAND, resamples=50, seed=3) == a


def test_requests_without_a_value_leave_the_others_alone() -> None:
    # One-token answers have no TPOT and no ITL; they are drawn but add nothing.
    one_token = run_of([90, 95], itl=10, n=1)
    ref = REF.model_copy(update={"requests": REF.requests + one_token.requests})
    got = {x.metric: x for x in compare(ref, CAND, resamples=300, seed=1)}
    assert got["tpot_ms.p50"].reference == pytest.approx(10.0)
    tpot = got["tpot_ms.p50"]
    assert tpot.ci_low is not None and tpot.ci_high is not None
    assert tpot.ci_low <= tpot.ratio <= tpot.ci_high  # type: ignore[operator]
    assert got["ttft_ms.p50"].reference == pytest.approx(115.0)


@pytest.mark.parametrize("q", [90.0, 99.0, 10.0])
@pytest.mark.parametrize("window", ["computed", "empty"])
def test_pooled_resampled_quantiles_equal_numpy_percentile(q: float, window: str) -> None:
    rng = np.random.default_rng(5)
    for _ in range(40):
        n = int(rng.integers(1, 30))
        groups = [list(np.round(rng.random(int(rng.integers(0, 4))), 2)) for _ in range(n)]
        lens = np.array([len(vs) for vs in groups], dtype=np.int64)
        p = _Pooled(np.array([v for vs in groups for v in vs], dtype=np.float64), lens, q)
        if window == "empty":
            p.hi = p.lo
        idx = rng.integers(0, n, size=(30, n))
        got = p.resampled_medians(_counts(idx, n))
        want = []
        for row in idx:
            values = [v for j in row for v in groups[j]]
            want.append(float(np.percentile(values, q)) if values else float("nan"))
        assert np.array_equal(got, np.array(want), equal_nan=True), (got, want)


def test_every_compared_metric_is_a_row_in_table_order() -> None:
    from qgate.profile.perf import COMPARED

    got = compare(REF, CAND, resamples=100, seed=2)
    assert [x.metric for x in got] == list(COMPARED)
    assert {x.metric: (x.unit, x.better) for x in got} == COMPARED


def test_tail_and_rate_metrics() -> None:
    got = {x.metric: x for x in compare(REF, CAND, resamples=300, seed=1)}
    assert got["ttft_ms.p90"].reference == pytest.approx(
        float(np.percentile([100, 110, 120, 130, 140, 150], 90))
    )
    assert got["ttft_ms.p99"].candidate == pytest.approx(
        float(np.percentile([50, 55, 60, 65, 70, 75], 99))
    )
    # 7 tokens after the first in 70 ms: 100 tok/s on both sides
    decode = got["request_decode_tok_s.p50"]
    assert decode.reference == pytest.approx(100.0) and decode.ratio == pytest.approx(1.0)
    # 8 tokens in (ttft + 70) ms per request
    full = got["request_output_tok_s.p50"]
    assert full.reference == pytest.approx(
        float(np.median([8 / ((t + 70) / 1000) for t in [100, 110, 120, 130, 140, 150]]))
    )
    assert full.ratio is not None and full.ratio > 1.0


def _timed_run(e2es_ms: list[float], role: str, tokens: int = 8, **params: object) -> ScenarioRun:
    """Closed loop at concurrency 1: requests back to back, each e2e long."""
    reqs, t = [], 0
    for i, e in enumerate(e2es_ms):
        first = t + int(e * MS / 4)
        end = t + int(e * MS)
        times = [first + (end - first) * k // (tokens - 1) for k in range(tokens)]
        reqs.append(
            RequestRecord(
                index=i,
                scheduled_ns=t,
                sent_ns=t,
                first_token_ns=first,
                done_ns=end,
                token_times_ns=times,
                prompt_tokens=4,
                output_tokens=tokens,
            )
        )
        t = end
    return ScenarioRun(
        scenario="s",
        role=role,
        kind="fixed",
        params=dict(params),
        gpus=2,  # type: ignore[arg-type]
        duration_ns=t,
        requests=reqs,
    )


def test_throughput_interval_is_centred_on_the_window_ratio() -> None:
    rng = np.random.default_rng(0)
    ref = _timed_run(list(100 + 20 * rng.random(40)), "reference", concurrency=1)
    cand = _timed_run(list(70 + 20 * rng.random(40)), "candidate", concurrency=1)
    got = {x.metric: x for x in compare(ref, cand, resamples=500, seed=0)}
    out = got["output_throughput"]
    assert out.ratio is not None and out.ci_low is not None and out.ci_high is not None
    assert out.ci_low < out.ratio < out.ci_high
    assert out.ratio == pytest.approx(ref.duration_ns / cand.duration_ns)
    assert out.ci_low > 1.2 and out.ci_high < 1.6  # 110 ms vs 80 ms mean E2E, 40 requests
    assert out.resamples == 500
    per_gpu = got["output_throughput_per_gpu"]
    assert per_gpu.ci_low == pytest.approx(out.ci_low) and per_gpu.ci_high == pytest.approx(
        out.ci_high
    )
    req = got["request_throughput"]
    assert req.ci_low is not None and req.ci_low < req.ratio < req.ci_high  # type: ignore[operator]


def test_open_loop_throughput_has_no_interval() -> None:
    ref = _timed_run([100.0] * 10, "reference", request_rate=5.0)
    cand = _timed_run([80.0] * 10, "candidate", request_rate=5.0)
    out = next(x for x in compare(ref, cand, resamples=200) if x.metric == "output_throughput")
    assert out.ratio is not None and out.ci_low is None and out.ci_high is None
    assert out.resamples == 0
