from __future__ import annotations

import numpy as np
import pytest

from qgate.perf.compare import _Pooled, compare
from qgate.perf.records import RequestRecord, ScenarioRun

MS = 1_000_000


def run_of(ttfts: list[float], itl: float, n: int = 8) -> ScenarioRun:
    reqs = []
    for i, t in enumerate(ttfts):
        times = [int((t + k * itl) * MS) for k in range(n)]
        reqs.append(
            RequestRecord(
                index=i,
                scheduled_ns=0,
                sent_ns=0,
                first_token_ns=times[0],
                done_ns=times[-1],
                token_times_ns=times,
                prompt_tokens=4,
                output_tokens=n,
            )
        )
    return ScenarioRun(
        scenario="s",
        role="reference",
        kind="fixed",
        gpus=1,
        duration_ns=10_000 * MS,
        requests=reqs,
    )


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
