"""The level of qgate's bound at the margin, summed exactly, the nuisance at its worst (issue 53).

    PYTHONPATH=$PWD .venv/bin/python perf/bench_level.py              # n 1-300, a sample to 2,000
    PYTHONPATH=$PWD .venv/bin/python perf/bench_level.py --quick      # n 25-28, 41-44, 200
    PYTHONPATH=$PWD .venv/bin/python perf/bench_level.py --n 41:61 --n 500

A `rule: bound` max_drop gate PASSes when its one-sided (1 - α) upper bound on the paired loss
is within the margin δ. Its level at the margin is the chance of that PASS when the true loss
is exactly δ, and it must be at most α whatever the nuisance: the rate d at which items flip
(lost δ + q, gained q, d = δ + 2q from δ to 1). For every n, δ and α here this bench sums that
chance over every (lost, gained) table of the trinomial (within 12 standard deviations of
its means; the mass left out is asserted below 1e-9), for q on a grid of 241 points with both
ends, refined around the largest (41 more within a grid step), and reports the largest over
the nuisance. Each table is judged by the test the bound inverts, at the margin: the gate's
own (quality derivation 7: `qgate.core.bounds.exact_shows(refined=True)` at or below
EXACT_MAX items, `corrected_rejects` above), and beside it derivation 6 (the exact bound's
supremum on its 61-point grid) and Tango's plain score test above EXACT_MAX (derivation 5).
The FAIL side likewise: the chance that the lower bound is above δ at a true loss of δ, for
derivation 7's (the mirrored table's upper bound: exact, or corrected above EXACT_MAX) and
Tango's plain lower bound (derivations 6 and before); and, to n 100, the exact McNemar FAIL
(the `significance` gate) at a true loss of 0. tests/unit/core/test_bounds.py and
test_exact_bound.py hold each to its bound on a sample of tables.

Margins 0.02-0.30 and α 0.0025-0.10: what the profiles and their looks use (0.0167 is 0.05 over
three suites, 0.0025 a 0.01 split over four looks). Writes perf/results/level/<date>.md and
.json unless --quick or --no-write.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import platform
import subprocess
import sys
import time
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgate.core import bounds  # noqa: E402
from qgate.core.corrected_score import corrected_rejects  # noqa: E402
from qgate.quality.stats import mcnemar_rejects  # noqa: E402

MARGINS = (0.02, 0.03, 0.05, 0.07, 0.10, 0.15, 0.20, 0.25, 0.30)
ALPHAS = (0.0025, 0.005, 0.01, 0.0167, 0.025, 0.05, 0.10)
DENSE = range(1, 301)
SAMPLE = (350, 400, 500, 650, 800, 1000, 1319, 1600, 2000)
QUICK = (*range(25, 29), *range(41, 45), 200)
RULES = (
    "qgate (derivation 7)",
    "derivation 6",
    "plain score (derivation 5)",
    "FAIL: lower bound (derivation 7)",
    "FAIL: plain lower bound (derivations 6 and before)",
)
PASS_RULES, FAIL_RULES = RULES[:3], RULES[3:]
GRID, REFINE, SDS = 241, 41, 12.0
MCNEMAR_MAX = 100  # n up to which the McNemar FAIL is measured
RESULTS = ROOT / "perf" / "results" / "level"

Bools = npt.NDArray[np.bool_]


def _swap(n: int) -> npt.NDArray[np.intp]:
    """Each table's index of its mirror, (gained, lost) for (lost, gained)."""
    b, c = _tables(n)
    bi, ci = c.astype(np.intp), b.astype(np.intp)
    return bi * (n + 1) - bi * (bi - 1) // 2 + ci


def _tables(n: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = b + c <= n
    return b[keep].astype(np.float64), c[keep].astype(np.float64)


def shown(n: int, margin: float) -> Bools:
    """Per rule and α, whether each (lost, gained) table of n items (lost-major, lost + gained
    <= n, as `bounds.exact_shows`) PASSes at the margin (the PASS rules) or FAILs past it (the
    FAIL rules, the lower bound above the margin): (len(RULES) x len(ALPHAS), tables)."""
    lost, gained = _tables(n)
    mirror = _swap(n)
    rows: dict[str, list[Bools]] = {rule: [] for rule in RULES}
    for alpha in ALPHAS:
        z = NormalDist().inv_cdf(1 - alpha)
        # FAIL: the lower bound above δ is the mirror's upper bound below -δ
        plain_fail = bounds.score_rejects(gained, lost, n, -margin, z)
        if n <= bounds.EXACT_MAX:
            grid = bounds.exact_shows(n, margin, 1 - alpha)
            fine = bounds.exact_shows(n, margin, 1 - alpha, refined=True)
            fail = bounds.exact_shows(n, -margin, 1 - alpha, refined=True)[mirror]
            got = (fine, grid, grid, fail, plain_fail)
        else:
            plain = bounds.score_rejects(lost, gained, n, margin, z)
            corrected = corrected_rejects(lost, gained, n, margin, z)
            fail = corrected_rejects(gained, lost, n, -margin, z)
            got = (corrected, corrected, plain, fail, plain_fail)
        for rule, row in zip(RULES, got, strict=True):
            rows[rule].append(row)
    return np.array([row for rule in RULES for row in rows[rule]])


def mcnemar_level(n: int) -> list[float]:
    """Per α: the exact McNemar FAIL's largest chance at a true loss of 0 over the flip rate."""
    lost, gained = _tables(n)
    rejects = np.array(
        [
            [mcnemar_rejects(int(b), int(c), alpha) for b, c in zip(lost, gained, strict=True)]
            for alpha in ALPHAS
        ],
        dtype=np.float64,
    )
    lf = np.array([math.lgamma(k + 1) for k in range(n + 1)])
    qs = np.linspace(1e-6, 0.5, GRID)
    return [float(v) for v in np.array([sizes(n, 0.0, q, rejects, lf) for q in qs]).max(axis=0)]


def _span(n: int, rate: float) -> tuple[int, int]:
    mean, sd = n * rate, math.sqrt(n * rate * (1 - rate))
    return max(0, math.floor(mean - SDS * sd) - 2), min(n, math.ceil(mean + SDS * sd) + 2)


def sizes(n: int, margin: float, q: float, passes: Bools, lf: npt.NDArray[np.float64]) -> Bools:
    """The PASS chance of each row of `passes` when lost = margin + q, gained = q."""
    lost_rate, gained_rate = margin + q, q
    same = max(1 - lost_rate - gained_rate, 0.0)
    (b0, b1), (c0, c1) = _span(n, lost_rate), _span(n, gained_rate)
    b, c = np.meshgrid(np.arange(b0, b1 + 1), np.arange(c0, c1 + 1), indexing="ij")
    keep = b + c <= n
    b, c = b[keep], c[keep]
    rest = n - b - c
    log_p = lf[n] - lf[b] - lf[c] - lf[rest]
    for count, rate in ((b, lost_rate), (c, gained_rate), (rest, same)):
        log_p = log_p + (count * math.log(rate) if rate > 0 else np.where(count > 0, -np.inf, 0))
    p = np.exp(log_p)
    assert p.sum() > 1 - 1e-9, f"the window holds {p.sum()} of the mass (n {n}, q {q})"
    at = b * (n + 1) - b * (b - 1) // 2 + c
    return np.asarray(passes[:, at] @ p)


def worst(n: int, margin: float) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per rule and α: the largest PASS chance at the margin over the nuisance, and the
    discordance where it is."""
    passes = shown(n, margin).astype(np.float64)
    lf = np.array([math.lgamma(k + 1) for k in range(n + 1)])
    top = (1 - margin) / 2
    qs = np.linspace(0.0, top, GRID)
    grid = np.array([sizes(n, margin, q, passes, lf) for q in qs])  # (q, rows)
    best, where = grid.max(axis=0), qs[grid.argmax(axis=0)]
    step = top / (GRID - 1)  # refine around each row's largest, every row at every point
    near = np.unique(
        np.clip(
            np.concatenate([np.linspace(w - step, w + step, REFINE) for w in set(where)]), 0, top
        )
    )
    fine = np.array([sizes(n, margin, q, passes, lf) for q in near])
    better = fine.max(axis=0) > best
    best = np.where(better, fine.max(axis=0), best)
    where = np.where(better, near[fine.argmax(axis=0)], where)
    return best, margin + 2 * where


def sweep(ns: list[int]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for n in ns:
        for margin in MARGINS:
            best, disc = worst(n, margin)
            for i, alpha in enumerate(ALPHAS):
                for k, rule in enumerate(RULES):
                    j = k * len(ALPHAS) + i
                    rows.append(
                        {
                            "rule": rule,
                            "n": n,
                            "margin": margin,
                            "alpha": alpha,
                            "size": float(best[j]),
                            "discordance": round(float(disc[j]), 4),
                        }
                    )
    return rows


def _table(rows: list[dict[str, Any]], rules: tuple[str, ...], what: str = "PASS") -> list[str]:
    lines = [
        f"| rule | α | worst false {what} | worst / α | at (n, δ, d) | (n, δ) above α |",
        "|---|---|---|---|---|---|",
    ]
    for rule in rules:
        for alpha in ALPHAS:
            mine = [r for r in rows if r["rule"] == rule and r["alpha"] == alpha]
            if not mine:
                continue
            top = max(mine, key=lambda r: float(r["size"]))
            size = float(top["size"])
            over = sum(1 for r in mine if float(r["size"]) > alpha * (1 + 1e-9))
            lines.append(
                f"| {rule} | {alpha:g} | {size:.5f} | {size / alpha:.4f} | "
                f"({top['n']}, {top['margin']}, {top['discordance']}) | {over} of {len(mine)} |"
            )
    return lines


def summary(rows: list[dict[str, Any]], mcnemar: dict[int, list[float]]) -> str:
    """Per rule and α: the largest size / α, where, and how many (n, δ) are above α, at or
    below EXACT_MAX items and above it; then the exact McNemar FAIL at a true loss of 0."""
    out = []
    for title, part in (
        (f"n at or below {bounds.EXACT_MAX} (the exact bound)", lambda n: n <= bounds.EXACT_MAX),
        (f"n above {bounds.EXACT_MAX}", lambda n: n > bounds.EXACT_MAX),
    ):
        mine = [r for r in rows if part(int(r["n"]))]
        if mine:
            out += [f"### {title}: PASS at a true loss of δ", "", *_table(mine, PASS_RULES), ""]
            out += [
                f"### {title}: FAIL at a true loss of δ",
                "",
                *_table(mine, FAIL_RULES, "FAIL"),
                "",
            ]
    if mcnemar:
        out += ["### exact McNemar FAIL (significance) at a true loss of 0", ""]
        out += ["| α | worst false FAIL | worst / α | at n |", "|---|---|---|---|"]
        for i, alpha in enumerate(ALPHAS):
            n, size = max(((n, v[i]) for n, v in mcnemar.items()), key=lambda t: t[1])
            out.append(f"| {alpha:g} | {size:.5f} | {size / alpha:.4f} | {n} |")
    return "\n".join(out)


def spans(ns: list[int]) -> str:
    """1, 2, 3, 5 -> '1-3, 5'."""
    out: list[str] = []
    start = prev = ns[0]
    for n in [*ns[1:], None]:
        if n != prev + 1:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            if n is None:
                break
            start = n
        prev = n
    return ", ".join(out)


def compact(rows: list[dict[str, Any]], ns: list[int]) -> dict[str, Any]:
    """The rows as arrays: per rule, the worst size / α over the nuisance (4 decimals),
    indexed [n][margin][α] in the order of `ns`, MARGINS and ALPHAS."""
    at = {(r["rule"], r["n"], r["margin"], r["alpha"]): float(r["size"]) for r in rows}
    return {
        "ns": ns,
        "margins": list(MARGINS),
        "alphas": list(ALPHAS),
        "size_over_alpha": {
            rule: [
                [[round(at[(rule, n, m, a)] / a, 4) for a in ALPHAS] for m in MARGINS] for n in ns
            ]
            for rule in RULES
        },
    }


def revision() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "?"


def render(
    rows: list[dict[str, Any]],
    ns: list[int],
    wall: float,
    command: str,
    mcnemar: dict[int, list[float]],
) -> str:
    return (
        f"Level at the margin, exact, the nuisance at its worst: n {spans(ns)}; margins "
        f"{', '.join(map(str, MARGINS))}; α {', '.join(f'{a:g}' for a in ALPHAS)}; {wall:.0f} s "
        f"(Python {platform.python_version()}, numpy {np.__version__}, qgate {revision()})"
        f"\n\nCommand: `{command}`\n\n" + summary(rows, mcnemar) + "\n"
    )


def _ranges(specs: list[str]) -> list[int]:
    out: list[int] = []
    for spec in specs:
        lo, _, hi = spec.partition(":")
        out += list(range(int(lo), int(hi))) if hi else [int(lo)]
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", action="append", metavar="N[:END]", help="n, or n from N to END-1")
    ap.add_argument("--quick", action="store_true", help="n 25-28, 41-44 and 200, no files")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    ns = _ranges(args.n) if args.n else list(QUICK if args.quick else (*DENSE, *SAMPLE))
    start = time.monotonic()
    rows = sweep(ns)
    mcnemar = {n: mcnemar_level(n) for n in ns if n <= MCNEMAR_MAX}
    wall = time.monotonic() - start
    command = (
        ".venv/bin/python perf/bench_level.py"
        + (" --quick" if args.quick else "")
        + "".join(f" --n {s}" for s in args.n or [])
    )
    text = render(rows, ns, wall, command, mcnemar)
    print(text)
    if args.quick or args.no_write:
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = RESULTS / dt.date.today().isoformat()
    stem.with_suffix(".md").write_text(text)
    payload = {"wall_s": round(wall, 1), "command": command, **compact(rows, ns)}
    stem.with_suffix(".json").write_text(json.dumps(payload) + "\n")
    print(f"wrote {stem}.md and .json")


if __name__ == "__main__":
    main()
