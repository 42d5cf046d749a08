from __future__ import annotations

import numpy as np
import pytest

from qgate.perf.compare import _Pooled


@pytest.mark.parametrize("q", [50.0, 90.0, 99.0])
def test_many_tied_values_in_any_order_give_numpys_quantiles(q: float) -> None:
    # Thousands of values on a few levels: an unstable sort orders the tied values' requests
    # arbitrarily, which must move no resampled quantile.
    rng = np.random.default_rng(11)
    n = 300
    groups = [list(rng.integers(0, 6, size=int(rng.integers(0, 12))) / 2) for _ in range(n)]
    lens = np.array([len(vs) for vs in groups], dtype=np.int64)
    p = _Pooled(np.array([v for vs in groups for v in vs], dtype=np.float64), lens, q)
    assert p.values.size > 1000
    idx = rng.integers(0, n, size=(40, n))
    counts = np.array([np.bincount(row, minlength=n) for row in idx], dtype=np.float64)
    got = p.resampled_medians(counts)
    want = [float(np.percentile([v for j in row for v in groups[j]], q)) for row in idx]
    np.testing.assert_array_equal(got, want)
