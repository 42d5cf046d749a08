"""Sequential looks (`quality.stop: looks`): their level at the margin, and the items they save.

    .venv/bin/python perf/bench_looks.py               # 500 reps a row (~4 min on 2 cores)
    .venv/bin/python perf/bench_looks.py --reps 2000 --seed 7

Each row simulates one exact-answer suite of n paired items, asked in blocks and judged at
K evenly spaced looks with qgate's own look rule (`qgate.gates.looks.look_decision`, the
function the board and verify use): the suite ends at the first look that decides it. Two
candidates, at the discordance d (the share of items whose answers differ):

- at the margin: true loss exactly max_drop (lost (d + δ)/2, gained (d - δ)/2): its PASS
  rate is the false PASS the design bounds by alpha;
- clean: no true loss (lost = gained = d/2): its PASS rate is the power, and the mean items
  it took to its verdict what the looks save against running the whole suite.

Both with alpha split over the looks (qgate's rule) and, for comparison, with every look at
the full alpha (what peeking without a correction does). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import platform
import random
import time
from pathlib import Path

from qgate.gates.looks import judged_policy, look_decision, look_sizes
from qgate.profile import AccuracyPolicy, QualitySpec
from qgate.quality.records import ItemRecord

ROWS = [(120, 3, 0.15), (300, 3, 0.10), (300, 2, 0.10), (600, 4, 0.10)]
DISCORDANCE = 0.4


def _item(i: int, correct: bool) -> ItemRecord:
    return ItemRecord(
        id=f"m{i:05d}", prompt_sha256="", output="", answer=None, expected="1", correct=correct
    )


def one_suite(
    rng: random.Random, policy: AccuracyPolicy, n: int, looks: int, lose: float, gain: float
) -> tuple[bool, int]:
    """(PASSed, items asked) of one simulated suite under looks."""
    ref, cand = [], []
    for i in range(n):
        u, same = rng.random(), rng.random() < 0.5
        ref.append(_item(i, u < lose or (u >= lose + gain and same)))
        cand.append(_item(i, lose <= u < lose + gain or (u >= lose + gain and same)))
    for size in look_sizes(n, looks):
        decided = look_decision(policy, ref, cand[:size], n)
        if decided is not None:
            return all(v == "pass" for v in decided.values()), size
    return False, n


def row(n: int, looks: int, margin: float, reps: int, seed: int) -> list[str]:
    spec = QualitySpec.model_validate(
        {
            "math": {"prompts": ["short"], "limit": n, "max_drop": margin, "rule": "bound"},
            "stop": "looks",
            "looks": looks,
        }
    )
    assert spec.math is not None
    out = []
    for name, policy in (("split", judged_policy(spec, spec.math)), ("unsplit", spec.math)):
        rng = random.Random(seed)
        edge = [
            one_suite(rng, policy, n, looks, (DISCORDANCE + margin) / 2, (DISCORDANCE - margin) / 2)
            for _ in range(reps)
        ]
        clean = [
            one_suite(rng, policy, n, looks, DISCORDANCE / 2, DISCORDANCE / 2) for _ in range(reps)
        ]
        false_pass = sum(p for p, _ in edge) / reps
        power = sum(p for p, _ in clean) / reps
        items = sum(k for _, k in clean) / reps
        out.append(
            f"| {n} | {looks} | {100 * margin:g} | {name} | {false_pass:.3f} | {power:.3f} | "
            f"{items:.0f} of {n} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--seed", type=int, default=53)
    args = ap.parse_args()
    info = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next(
        (x.split(":", 1)[1].strip() for x in info if "model name" in x), platform.processor()
    )
    print(f"machine: {cpu}; {args.reps} reps a row, seed {args.seed}, discordance {DISCORDANCE}")
    print(
        "| n | looks | margin (pts) | alpha | false PASS at the margin | clean PASS | "
        "clean items to verdict |"
    )
    print("|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for n, looks, margin in ROWS:
        for line in row(n, looks, margin, args.reps, args.seed):
            print(line, flush=True)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
