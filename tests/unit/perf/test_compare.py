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


def test_pooled_resampled_median_equals_numpy_on_expanded_values() -> None:
    rng = np.random.default_rng(3)
    groups = [list(rng.random(int(rng.integers(1, 6)))) for _ in range(9)]
    p = _Pooled(groups)
    for _ in range(100):
        idx = rng.integers(0, 9, size=9)
        want = float(np.median([v for j in idx for v in groups[j]]))
        assert p.resampled_median(idx) == pytest.approx(want, abs=1e-12)
