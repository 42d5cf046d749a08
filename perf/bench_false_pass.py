"""False PASS at the margin, for each accuracy rule, by simulation (issue 53 item 7).

    .venv/bin/python perf/bench_false_pass.py            # the grid, 2,000 reps a cell (~2 min)
    .venv/bin/python perf/bench_false_pass.py --exact    # and exact sums where it is above α
    .venv/bin/python perf/bench_false_pass.py --quick    # a few cells, 500 reps, no files (~20 s)
    .venv/bin/python perf/bench_false_pass.py --reps 4000 --seed 7
    .venv/bin/python perf/bench_false_pass.py --exact-at 41:0.25:0.4   # one cell, exactly
    .venv/bin/python perf/bench_false_pass.py --exact-at 41:0.25:0.4 --derivation 5  # as before

What it measures. A "false PASS at the margin" is a PASS given to a candidate whose true
accuracy loss is exactly the margin δ (`max_drop`): the rule was asked to let through only
candidates that lose at most δ, and this one stands on the line, so a rule that claims a
level α (5% here) should PASS it at most 5% of the time. The figure for a rule is the share
of simulated suites it PASSes.

The model: n paired items, each independently one of four cells with true rates both right
p_ref - L, lost L = (d + δ)/2, gained G = (d - δ)/2, both wrong 1 - p_ref - G, so the true
loss L - G is δ and the discordance (the share of items whose answers differ between the
sides) is d. Grid: n in {20, 40, 81, 200, 500, 1319}, δ in {0.05, 0.10, 0.15, 0.25}, d in
{δ, δ + 0.05, 2δ, 0.4} (d = δ: the candidate only loses, never gains), p_ref in {0.5, 0.7}.
The lost and gained counts are drawn once per (n, δ, d) and shared by both p_ref (only the
split of the concordant items between both-right and both-wrong depends on p_ref), so the
paired rules' figures are the same for both p_ref and the comparison is on common draws.

Rules (each at the same margin δ):

- qgate bound: qgate's own suite verdict (`qgate.gates.suite.outcome` over `gates_of` a
  default `AccuracyPolicy(max_drop=δ, rule="bound")`): the max_drop gate PASSes only when the
  one-sided 95% upper bound on the paired loss (`qgate.core.bounds.loss_upper`: exact to 40
  items, above them the score bound corrected to keep its level from quality derivation 6,
  Tango's plain one before; `--derivation`) is within δ, beside the significance gate (exact
  McNemar). A cell where qgate's validation refuses the profile (a `limit: n` math suite
  whose bound can never pass δ, `qgate.profile.checks.profile_problems`) is "refused".
- qgate point: the same with `rule="point"` (the rule before issue 53): the observed drop
  within δ and the exact McNemar test not significant.
- NeMo Wald, vLLM rtol, unpaired z, floor, MLPerf 99%: the peers, written below (`PEERS`),
  one comment each on where they come from.

For context each cell also gives qgate bound's power: its PASS rate when the true loss is 0
at the same discordance (L = G = d/2). Sampling error of a rate near α with r reps is about
sqrt(α(1 - α)/r) (0.005 at 2,000); a qgate figure above α + 3 of those is flagged, never
hidden. perf/bench_bounds.py computes the same kind of figure exactly (summed over every
outcome) on a smaller grid, with each peer at its own default margin instead.

Writes perf/results/false_pass/<date>.md and .json (the figures and the machine) unless
--quick or --no-write.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qgate.gates.judgement import QUALITY_DERIVATION  # noqa: E402
from qgate.gates.suite import gates_of, outcome  # noqa: E402
from qgate.profile import AccuracyPolicy, Profile  # noqa: E402
from qgate.profile.checks import profile_problems  # noqa: E402
from qgate.quality.stats import FlipCounts  # noqa: E402

ALPHA = 0.05
SIZES = (20, 40, 81, 200, 500, 1319)
MARGINS = (0.05, 0.10, 0.15, 0.25)
REF_ACCS = (0.5, 0.7)
QUICK_SIZES, QUICK_MARGINS = (20, 81, 500), (0.10, 0.25)
RESULTS = ROOT / "perf" / "results" / "false_pass"
Z95 = NormalDist().inv_cdf(0.975)  # two-sided 95%
Z_ONE = NormalDist().inv_cdf(1 - ALPHA)  # one-sided at alpha
TINY = 1e-12

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


def discordances(margin: float) -> tuple[float, ...]:
    """d from the margin up: {δ, δ + 0.05, 2δ, 0.4}, each at least δ and at most 1."""
    grid = (margin, margin + 0.05, 2 * margin, 0.4)
    return tuple(sorted({round(d, 6) for d in grid if margin - TINY <= d <= 1}))


# ---- qgate's rules: its own gates, verdict by verdict ----


@cache
def _policy(rule: str, margin: float) -> AccuracyPolicy:
    return AccuracyPolicy(max_drop=margin, rule=rule)  # every other key at its default


@cache
def qgate_verdict(
    rule: str, n: int, margin: float, lost: int, gained: int, derivation: int = QUALITY_DERIVATION
) -> str:
    """The suite's verdict as qgate judges it (by quality `derivation`): 'pass' only when every
    gate passes. Its gates (max_drop, significance) read only the lost and gained counts."""
    policy = _policy(rule, margin)
    flips = FlipCounts(both_correct=n - lost - gained, lost=lost, gained=gained, both_wrong=0)
    got = {outcome(g, policy, flips, derivation) for g in gates_of(policy)}
    return "fail" if "fail" in got else "inconclusive" if "inconclusive" in got else "pass"


@cache
def refused(n: int, margin: float) -> bool:
    """qgate's validation refuses a `rule: bound` max_drop its n items can never show."""
    profile = Profile.model_validate(
        {
            "name": "false-pass",
            "model": {"embedded": "smollm2"},
            "candidate": {"args": {"max_num_seqs": 4}},
            "quality": {
                "math": {"prompts": ["short"], "limit": n, "max_drop": margin, "rule": "bound"}
            },
        }
    )
    return any(path[-1] == "max_drop" for path, _ in profile_problems(profile))


def qgate_verdicts(
    rule: str, n: int, margin: float, lost: Ints, gained: Ints, derivation: int
) -> list[str]:
    """qgate's verdict on each simulated suite (one call per distinct table)."""
    keys, where = np.unique(lost * (n + 1) + gained, return_inverse=True)
    each = [
        qgate_verdict(rule, n, margin, int(k // (n + 1)), int(k % (n + 1)), derivation)
        for k in keys
    ]
    return [each[i] for i in where.ravel()]


# ---- the peers: each a PASS rule over arrays of 2x2 tables ----


@dataclass(frozen=True)
class Tables:
    """Simulated suites: counts per cell, one entry per rep; `p_ref` the true reference
    accuracy (what a peer that fixes its threshold before the run reads)."""

    n: int
    both: Ints
    lost: Ints
    gained: Ints
    p_ref: float

    @property
    def ref(self) -> npt.NDArray[np.float64]:
        return (self.both + self.lost) / self.n

    @property
    def cand(self) -> npt.NDArray[np.float64]:
        return (self.both + self.gained) / self.n

    @property
    def drop(self) -> npt.NDArray[np.float64]:
        return (self.lost - self.gained) / self.n


def nemo_wald(t: Tables, margin: float) -> Bools:
    # NeMo Evaluator `nel gate` (issue 53): PASS when the 95% paired Wald interval on the drop,
    # drop +- 1.96 sqrt(b + c - (b - c)^2 / n) / n, has its upper limit within max_drop.
    se = np.sqrt(np.maximum(t.lost + t.gained - (t.lost - t.gained) ** 2 / t.n, 0.0)) / t.n
    return np.asarray(t.drop + Z95 * se <= margin + TINY)


def vllm_rtol(t: Tables, margin: float) -> Bools:
    # vLLM CI (.buildkite/lm-eval-harness, a relative tolerance on a stored accuracy): PASS
    # when cand >= ref * (1 - rtol); rtol = δ / p_ref, the margin relative to the true
    # reference accuracy, so the line sits at a drop of δ (vLLM's own default is 0.08).
    rtol = margin / t.p_ref
    return np.asarray(t.cand >= t.ref * (1 - rtol) - TINY)


def unpaired_z(t: Tables, margin: float) -> Bools:
    # lm-eval's scripts/model_comparator.py, one-sided: z = (ref - cand) / sqrt(se_r^2 + se_c^2)
    # with se = sqrt(p(1 - p)/(n - 1)); PASS unless z >= z_0.95 (no margin: it tests 0).
    del margin
    var = (t.ref * (1 - t.ref) + t.cand * (1 - t.cand)) / (t.n - 1)
    diff = t.ref - t.cand
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, diff / np.sqrt(np.where(var > 0, var, 1.0)), np.sign(diff) * np.inf)
    return np.asarray(z < Z_ONE)


def fixed_floor(t: Tables, margin: float) -> Bools:
    # InferenceX / SGLang nightly style `assert accuracy >= floor`, the floor δ under the
    # reference: PASS when the observed drop in points is within δ (a point estimate only).
    return np.asarray(t.drop <= margin + TINY)


def mlperf_99(t: Tables, margin: float) -> Bools:
    # MLPerf Inference closed division: PASS when cand >= 99% of the reference's accuracy
    # (its own margin, 1% relative, whatever δ is).
    del margin
    return np.asarray(t.cand >= 0.99 * t.ref - TINY)


PEERS: dict[str, Callable[[Tables, float], Bools]] = {
    "NeMo Wald": nemo_wald,
    "vLLM rtol": vllm_rtol,
    "unpaired z": unpaired_z,
    "floor": fixed_floor,
    "MLPerf 99%": mlperf_99,
}
RULES = ("qgate bound", "qgate point", *PEERS)


# ---- the simulation ----


@dataclass
class Cell:
    """One grid cell's figures: PASS rates per rule at the margin (None: refused)."""

    n: int
    margin: float
    discordance: float
    p_ref: float
    reps: int
    false_pass: dict[str, float | None] = field(default_factory=dict)
    bound_at_margin: dict[str, float] = field(default_factory=dict)
    """qgate bound's verdicts at the margin: pass, fail, inconclusive shares."""
    bound_power: float | None = None
    """qgate bound's PASS rate with no true loss at the same discordance."""
    refused: bool = False
    bound_exact: float | None = None
    """qgate bound's false-PASS rate summed exactly (--exact, where the simulated one > α)."""


def _draw(
    n: int, loss: float, disc: float, reps: int, seed: int, tag: int
) -> tuple[Ints, Ints, Ints]:
    """(lost, gained, concordant) per rep for a true loss and discordance."""
    rates = [(disc + loss) / 2, (disc - loss) / 2, 1 - disc]
    rates = [max(r, 0.0) for r in rates]
    key = (seed, n, round(loss * 1e4), round(disc * 1e4), tag)
    drawn = np.random.default_rng(key).multinomial(n, rates, size=reps)
    return drawn[:, 0], drawn[:, 1], drawn[:, 2]


def _split(
    concordant: Ints, p_ref: float, lost_rate: float, disc: float, key: tuple[int, ...]
) -> Ints:
    """Both-right items among the concordant ones, for a true reference accuracy."""
    if disc >= 1:
        return np.zeros_like(concordant)
    share = (p_ref - lost_rate) / (1 - disc)
    return np.random.default_rng(key).binomial(concordant, share)


def _rate(xs: Bools | list[bool]) -> float:
    return float(np.mean(xs))


def simulate(
    n: int,
    margin: float,
    disc: float,
    p_refs: tuple[float, ...],
    reps: int,
    seed: int,
    derivation: int = QUALITY_DERIVATION,
) -> list[Cell]:
    """Every rule's PASS rate at the margin for one (n, δ, d), for each p_ref; with qgate
    bound's power at no true loss."""
    lost, gained, conc = _draw(n, margin, disc, reps, seed, 0)
    no_refusal = not refused(n, margin)
    verdicts = {
        r: qgate_verdicts(r, n, margin, lost, gained, derivation) for r in ("bound", "point")
    }
    power = None
    if no_refusal:
        l0, g0, _ = _draw(n, 0.0, disc, reps, seed, 1)
        zero = qgate_verdicts("bound", n, margin, l0, g0, derivation)
        power = _rate([v == "pass" for v in zero])
    out = []
    for p_ref in p_refs:
        lost_rate = (disc + margin) / 2
        if p_ref < lost_rate - TINY or 1 - p_ref < (disc - margin) / 2 - TINY:
            continue  # no such candidate: the rates would be negative
        key = (seed, n, round(margin * 1e4), round(disc * 1e4), round(p_ref * 1e4))
        both = _split(conc, p_ref, lost_rate, disc, key)
        tables = Tables(n, both, lost, gained, p_ref)
        cell = Cell(n, margin, disc, p_ref, reps, refused=not no_refusal, bound_power=power)
        bound = verdicts["bound"]
        cell.false_pass["qgate bound"] = _rate([v == "pass" for v in bound]) if no_refusal else None
        cell.bound_at_margin = {k: _rate([v == k for v in bound]) for k in ("pass", "fail")}
        cell.bound_at_margin["inconclusive"] = 1 - sum(cell.bound_at_margin.values())
        cell.false_pass["qgate point"] = _rate([v == "pass" for v in verdicts["point"]])
        for name, rule in PEERS.items():
            cell.false_pass[name] = _rate(rule(tables, margin))
        out.append(cell)
    return out


def exact_false_pass(
    n: int, margin: float, disc: float, rule: str = "bound", derivation: int = QUALITY_DERIVATION
) -> float:
    """qgate's false-PASS rate at the margin summed exactly over the (lost, gained) tables
    within 8 standard deviations of their means (every table, each by qgate's own verdict; no
    sampling, and no shortcut through the bound's monotonicity). The mass left out is below
    1e-9, asserted."""
    lost_rate, gained_rate = (disc + margin) / 2, (disc - margin) / 2
    lf = [math.lgamma(k + 1) for k in range(n + 1)]

    def span(rate: float) -> range:
        mean, sd = n * rate, math.sqrt(n * rate * (1 - rate))
        return range(
            max(0, math.floor(mean - 8 * sd) - 2), min(n, math.ceil(mean + 8 * sd) + 2) + 1
        )

    def log_rate(count: int, rate: float) -> float:
        return 0.0 if count == 0 else -math.inf if rate <= 0 else count * math.log(rate)

    total = mass = 0.0
    for lost in span(lost_rate):
        for gained in span(gained_rate):
            rest = n - lost - gained
            if rest < 0:
                continue
            log_p = lf[n] - lf[lost] - lf[gained] - lf[rest]
            log_p += log_rate(lost, lost_rate) + log_rate(gained, gained_rate)
            log_p += log_rate(rest, 1 - disc)
            p = math.exp(log_p) if log_p > -math.inf else 0.0
            mass += p
            if p > 0 and qgate_verdict(rule, n, margin, lost, gained, derivation) == "pass":
                total += p
    assert mass > 1 - 1e-9, f"the window holds {mass} of the mass"
    return total


def slack(reps: int, k: float = 3.0) -> float:
    """k standard errors of a PASS rate of α over `reps` independent suites."""
    return k * math.sqrt(ALPHA * (1 - ALPHA) / reps)


# ---- output ----


def _fmt(x: float | None) -> str:
    return "refused" if x is None else f"{x:.3f}"


def table(cells: list[Cell]) -> str:
    head = ["n", "δ", "d", "p_ref", *RULES, "qgate bound power (no loss)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cells:
        row = [str(c.n), f"{c.margin:.2f}", f"{c.discordance:.2f}", f"{c.p_ref:.1f}"]
        row += [_fmt(c.false_pass[r]) for r in RULES]
        row.append(_fmt(c.bound_power) if not c.refused else "refused")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _worst(cells: list[Cell], rule: str) -> tuple[float, tuple[int, float, float, float]]:
    worst = max(cells, key=lambda c: c.false_pass[rule] or 0.0)
    return worst.false_pass[rule] or 0.0, (worst.n, worst.margin, worst.discordance, worst.p_ref)


def summary(cells: list[Cell], reps: int) -> tuple[str, dict[str, dict[str, object]]]:
    """Per rule: the largest false-PASS rate over the grid and over the cells qgate's bound
    judges (not refused), where, and the cells above α + 3 standard errors."""
    lines = [
        "| rule | max false PASS | at (n, δ, d, p_ref) | max where qgate judges | at | "
        f"cells > α + {slack(reps):.3f} (3 s.e.) | cells |",
        "|---|---|---|---|---|---|---|",
    ]
    out: dict[str, dict[str, object]] = {}
    for rule in RULES:
        judged = [c for c in cells if c.false_pass[rule] is not None]
        top, where = _worst(judged, rule)
        top_q, where_q = _worst([c for c in judged if not c.refused], rule)
        over = [c for c in judged if (c.false_pass[rule] or 0.0) > ALPHA + slack(reps)]
        lines.append(
            f"| {rule} | {top:.3f} | {where} | {top_q:.3f} | {where_q} | {len(over)} | "
            f"{len(judged)} |"
        )
        out[rule] = {
            "max": top,
            "at": where,
            "max_where_qgate_judges": top_q,
            "at_where_qgate_judges": where_q,
            "over_alpha": [(c.n, c.margin, c.discordance, c.p_ref) for c in over],
            "judged": len(judged),
        }
    return "\n".join(lines), out


def exact_table(cells: list[Cell], derivation: int) -> str:
    """qgate bound's exact false-PASS rate for each (n, δ, d) whose simulated figure is > α."""
    done: dict[tuple[int, float, float], float] = {}
    for c in cells:
        if (c.false_pass["qgate bound"] or 0.0) > ALPHA:
            key = (c.n, c.margin, c.discordance)
            if key not in done:
                done[key] = exact_false_pass(*key, derivation=derivation)
            c.bound_exact = done[key]
    if not done:
        return "\n\nqgate bound: no cell's simulated figure is above α."
    rows = "\n".join(f"| {n} | {m:.2f} | {d:.2f} | {x:.4f} |" for (n, m, d), x in done.items())
    return (
        "\n\n## qgate bound, exact, where the simulation is above α\n\n"
        "| n | δ | d | exact false PASS |\n|---|---|---|---|\n" + rows
    )


def machine() -> dict[str, object]:
    cpu: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "cpu family", "model") and key not in cpu:
                cpu[key] = value.strip()
    except OSError:
        pass
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        rev = ""
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cores": os.cpu_count(),
        **cpu,
        "commit": rev,
    }


def run(
    sizes: tuple[int, ...], margins: tuple[float, ...], reps: int, seed: int, derivation: int
) -> list[Cell]:
    cells = []
    for n in sizes:
        for margin in margins:
            for disc in discordances(margin):
                cells += simulate(n, margin, disc, REF_ACCS, reps, seed, derivation)
    return cells


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, help="simulated suites per cell (2,000; --quick 500)")
    ap.add_argument("--seed", type=int, default=53, help="numpy seed (each cell's own stream)")
    ap.add_argument("--quick", action="store_true", help="a few cells, 500 reps, no files")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--tag", help="written as <date>-TAG.md and .json (a second run that day)")
    ap.add_argument(
        "--exact",
        action="store_true",
        help="also sum qgate bound's false PASS exactly where the simulated figure is above "
        "alpha (minutes at n = 1319)",
    )
    ap.add_argument(
        "--exact-at",
        action="append",
        metavar="N:DELTA:D",
        help="only print qgate bound's exact false PASS at these cells (any n, δ, d; repeat)",
    )
    ap.add_argument(
        "--derivation",
        type=int,
        default=QUALITY_DERIVATION,
        help=f"the quality derivation qgate's rules judge by (default {QUALITY_DERIVATION}; "
        "5: Tango's plain score bound above 40 items)",
    )
    args = ap.parse_args(argv)
    if args.exact_at:
        for spec in args.exact_at:
            n, margin, disc = spec.split(":")
            x = exact_false_pass(int(n), float(margin), float(disc), derivation=args.derivation)
            print(
                f"n {n}, δ {margin}, d {disc}: qgate bound's exact false PASS {x:.4f} "
                f"(quality derivation {args.derivation})"
            )
        return
    sizes: tuple[int, ...] = SIZES
    margins: tuple[float, ...] = MARGINS
    reps = args.reps or 2000
    if args.quick:
        sizes, margins, reps = QUICK_SIZES, QUICK_MARGINS, args.reps or 500
    start = time.monotonic()
    cells = run(sizes, margins, reps, args.seed, args.derivation)
    wall = time.monotonic() - start
    exact_text, exact_wall = "", 0.0
    if args.exact:
        exact_text = exact_table(cells, args.derivation)
        exact_wall = time.monotonic() - start - wall
    where = machine()
    short, figures = summary(cells, reps)
    text = (
        f"False PASS at the margin (true loss = δ), {reps} reps a cell, seed {args.seed}, "
        f"α = {ALPHA}, quality derivation {args.derivation}; simulation {wall:.0f} s"
        + (f", exact sums {exact_wall:.0f} s" if args.exact else "")
        + "\n\n"
        f"machine: {where.get('model name', '?')} (family {where.get('cpu family', '?')} model "
        f"{where.get('model', '?')}), {where['cores']} cores, Python {where['python']}, numpy "
        f"{where['numpy']}, qgate {where['commit']}\n\n"
        "Command: `.venv/bin/python perf/bench_false_pass.py"
        + (" --quick" if args.quick else "")
        + (" --exact" if args.exact else "")
        + (f" --reps {args.reps}" if args.reps else "")
        + (f" --seed {args.seed}" if args.seed != 53 else "")
        + (f" --derivation {args.derivation}" if args.derivation != QUALITY_DERIVATION else "")
        + "`\n\n## Summary\n\n"
        + short
        + exact_text
        + "\n\n## Every cell (false-PASS rate per rule; qgate bound's power with no true loss)\n\n"
        + table(cells)
        + "\n"
    )
    print(text)
    if args.quick or args.no_write:
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = RESULTS / (dt.date.today().isoformat() + (f"-{args.tag}" if args.tag else ""))
    stem.with_suffix(".md").write_text(text)
    payload = {
        "alpha": ALPHA,
        "derivation": args.derivation,
        "reps": reps,
        "seed": args.seed,
        "wall_s": round(wall, 1),
        "exact_wall_s": round(exact_wall, 1),
        "machine": where,
        "summary": figures,
        "cells": [asdict(c) for c in cells],
    }
    stem.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    print(f"wrote {stem}.md and .json")


if __name__ == "__main__":
    main()
