"""How long sizing takes (`items_needed`: the smallest n whose exact power reaches a target).

`qgate plan`, `run` and `verify` size every suite with a `detect` block, and a
plan also sizes each `max_drop` it reports on. Times a grid of typical
detections (drops 2-20 points, discordance from the prior to 1.0, power 0.8 and
0.9, alpha 0.05 and 0.0167): the first pass in a fresh process (caches cold)
and the median and worst of three warm passes. Also checks every answer
against a plain scan of the exact power from n = 1 (the definition).

    .venv/bin/python perf/bench_sizing.py
"""

from __future__ import annotations

import statistics
import time

from qgate.profile import Detect
from qgate.quality.sizing import items_needed
from qgate.quality.stats import mcnemar_power


def _grid() -> list[tuple[Detect, float]]:
    out = []
    for drop in (0.02, 0.05, 0.1, 0.2):
        for disc in (None, 0.3, 1.0):
            if disc is not None and disc < drop:
                continue
            for power in (0.8, 0.9):
                for alpha in (0.05, 0.0167):
                    out.append((Detect(drop=drop, discordance=disc, power=power), alpha))
    return out


def _plain_scan(detect: Detect, alpha: float, disc: float) -> int | None:
    return next(
        (
            n
            for n in range(1, detect.max_items + 1)
            if mcnemar_power(n, detect.drop, disc, alpha) >= detect.power
        ),
        None,
    )


def main() -> None:
    grid = _grid()
    start = time.perf_counter()
    answers = [items_needed(d, a) for d, a in grid]
    cold = time.perf_counter() - start
    warm = []
    for _ in range(3):
        for detect, alpha in grid:
            t = time.perf_counter()
            items_needed(detect, alpha)
            warm.append(time.perf_counter() - t)
    wrong = sum(
        s.needed != _plain_scan(d, a, s.discordance)
        for (d, a), s in zip(grid, answers, strict=True)
    )
    print(
        f"{len(grid)} detections: first pass {cold * 1e3:.0f} ms in all; warm per call median "
        f"{statistics.median(warm) * 1e3:.2f} ms, worst {max(warm) * 1e3:.1f} ms; "
        f"{wrong} differ from a plain scan from n = 1"
    )


if __name__ == "__main__":
    main()
