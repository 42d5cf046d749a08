"""Stated power of the sampled test (`quality.sampled`, issue 55 item 2), by simulation.

    .venv/bin/python perf/bench_sampled.py                 # the table, 400 reps a cell (~1 min)
    .venv/bin/python perf/bench_sampled.py --reps 1000 --seed 7
    .venv/bin/python perf/bench_sampled.py --quick         # 100 reps, two settings
    .venv/bin/python perf/bench_sampled.py --temperature 0.5   # asked at T = 0.5 (~2 min)

The model. A question is a distribution over M = 12 answer texts: logits z_j ~ N(0, 1.5^2), and
the two texts that carry the right number get a bonus b ~ N(2.5, 2^2) each (per question: some
questions easy, some hard). The reference samples k texts at T = 1 (the profile's default): its
sampled accuracy is about 55% and its mean diversity about 0.59 at every k (0.35 at T = 0.5). Each
trial draws N new questions and both sides' samples, then judges them with qgate's own gate
functions: `evaluate_suite` (the paired bound for fractional scores, `sampled.max_drop` 0.05)
and `diversity_verdict` (`sampled.max_diversity_change` 0.15), alpha 0.05. A suite PASSes when
both gates PASS, FAILs when either shows harm, else is INCONCLUSIVE.

Candidates:

- A/A: the reference's own distribution, its own draws;
- INT8 (benign): every logit moved by N(0, 0.15^2), fixed per question (weights quantised);
- max_num_seqs (benign): every logit moved by N(0, 0.05^2) (batch numerics);
- greedy: the temperature ignored, every sample the argmax text;
- T halved: sampled at half the temperature asked;
- T ignored: sampled at T = 1, the server's default, whatever was asked (at the default T = 1
  it is A/A; `--temperature 0.5` shows the wider direction);
- loss 10: the right texts' probability scaled down so the mean sampled accuracy is 10 points
  lower, the mass moved to the wrong texts in proportion.

What it prints, per (N, k): the PASS / INCONCLUSIVE / FAIL shares of each candidate; the false
FAIL rate is the FAIL share of A/A and the benign ones, the power the FAIL share of the others
(a fault found only INCONCLUSIVE is not caught but is not passed either). The table in
qgate/quality/sampled_power.py is this output at the default seed; `qgate plan` quotes it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qgate.gates.sampled import diversity_verdict  # noqa: E402
from qgate.gates.suite import evaluate_suite  # noqa: E402
from qgate.profile.sampled import SampledSuite  # noqa: E402
from qgate.quality.records import ItemRecord, SuiteRun  # noqa: E402

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

TEXTS = 12
RIGHT = 2  # texts 0 and 1 carry the right number
SPREAD, BONUS, BONUS_SD = 1.5, 2.5, 2.0
SETTINGS = [(64, 4), (64, 8), (64, 16), (128, 4), (128, 8), (256, 8)]
QUICK = [(64, 8), (128, 8)]
CANDIDATES = ["A/A", "INT8", "max_num_seqs", "greedy", "T halved", "T ignored", "loss 10"]


def _softmax(z: Floats, t: float) -> Floats:
    e = np.exp((z - z.max(axis=1, keepdims=True)) / t)
    out: Floats = e / e.sum(axis=1, keepdims=True)
    return out


def _draw(rng: np.random.Generator, p: Floats, k: int) -> Ints:
    cum = np.cumsum(p, axis=1)
    u = rng.random((p.shape[0], k))
    drawn: Ints = (cum[:, None, :] < u[:, :, None]).sum(axis=2)
    return np.minimum(drawn, TEXTS - 1)


def _lose(p: Floats, points: float) -> Floats:
    right = p[:, :RIGHT].sum(axis=1)
    keep = max(0.0, 1 - points / float(right.mean()))
    q = p.copy()
    q[:, :RIGHT] *= keep
    moved = right * (1 - keep)
    wrong = p[:, RIGHT:].sum(axis=1)
    q[:, RIGHT:] += p[:, RIGHT:] * (moved / wrong)[:, None]
    return q


def candidate(
    name: str, rng: np.random.Generator, z: Floats, k: int, t: float
) -> Callable[[], Ints]:
    """How the candidate `name` samples k texts of the questions whose logits are `z`, asked
    for temperature `t`."""
    if name == "A/A":
        return lambda: _draw(rng, _softmax(z, t), k)
    if name in ("INT8", "max_num_seqs"):
        moved = z + rng.normal(0, 0.15 if name == "INT8" else 0.05, z.shape)
        return lambda: _draw(rng, _softmax(moved, t), k)
    if name == "greedy":
        return lambda: np.repeat(z.argmax(axis=1)[:, None], k, axis=1)
    if name == "T halved":
        return lambda: _draw(rng, _softmax(z, t / 2), k)
    if name == "T ignored":  # the server's default temperature, 1, whatever was asked
        return lambda: _draw(rng, _softmax(z, 1.0), k)
    return lambda: _draw(rng, _lose(_softmax(z, t), 0.10), k)


def _diversity(texts: Ints) -> Floats:
    """qgate.quality.sampled_data.diversity of each row: the share of sample pairs that differ."""
    k = texts.shape[1]
    counts = np.stack([(texts == j).sum(axis=1) for j in range(TEXTS)], axis=1)
    out: Floats = 1 - (counts * (counts - 1)).sum(axis=1) / (k * (k - 1))
    return out


def _run(role: str, scores: Floats) -> SuiteRun:
    items = [
        ItemRecord.model_construct(
            id=str(i), output="", answer=None, expected="", correct=s == 1.0, score=float(s)
        )
        for i, s in enumerate(scores)
    ]
    return SuiteRun.model_construct(suite="sampled", role=role, items=items, planned=None)


def judge(setting: SampledSuite, ref: Ints, cand: Ints) -> str:
    """'pass', 'fail' or 'inconclusive' of the suite on two sides' sampled texts."""
    k = ref.shape[1]
    ref_s, cand_s = (ref < RIGHT).sum(axis=1) / k, (cand < RIGHT).sum(axis=1) / k
    verdicts = evaluate_suite(
        "sampled", setting, _run("reference", ref_s), _run("candidate", cand_s)
    )
    pairs = list(zip(_diversity(ref).tolist(), _diversity(cand).tolist(), strict=True))
    verdicts.append(diversity_verdict(setting, "sampled", pairs))
    if all(v.passed for v in verdicts):
        return "pass"
    return "fail" if any(not v.passed and not v.inconclusive for v in verdicts) else "inconclusive"


def cell(n: int, k: int, name: str, reps: int, seed: int, t: float = 1.0) -> dict[str, float]:
    """Shares of pass/inconclusive/fail of candidate `name` at (n, k), asked for temperature
    `t`, over `reps` trials."""
    rng = np.random.default_rng([seed, n, k, CANDIDATES.index(name)])
    setting = SampledSuite(prompts=n, samples=k, temperature=t)
    counts = {"pass": 0, "inconclusive": 0, "fail": 0}
    for _ in range(reps):
        z = rng.normal(0, SPREAD, (n, TEXTS))
        z[:, :RIGHT] += rng.normal(BONUS, BONUS_SD, (n, 1))
        ref = _draw(rng, _softmax(z, t), k)
        counts[judge(setting, ref, candidate(name, rng, z, k, t)())] += 1
    return {o: c / reps for o, c in counts.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20261207)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--temperature", type=float, default=1.0)
    args = parser.parse_args(argv)
    reps = 100 if args.quick else args.reps
    settings = QUICK if args.quick else SETTINGS
    t = args.temperature
    print(
        f"# perf/bench_sampled.py --reps {reps} --seed {args.seed} --temperature {t:g}"
        + (" --quick" * args.quick)
    )
    print(
        f"# shares PASS / INCONCLUSIVE / FAIL of the suite; T={t:g}, max_drop 0.05, "
        "max_diversity_change 0.15, alpha 0.05"
    )
    print("| N | k | requests | " + " | ".join(CANDIDATES) + " |")
    print("|---|---|---|" + "---|" * len(CANDIDATES))
    for n, k in settings:
        row = []
        for name in CANDIDATES:
            c = cell(n, k, name, reps, args.seed, t)
            row.append(f"{c['pass']:.2f} / {c['inconclusive']:.2f} / {c['fail']:.2f}")
        print(f"| {n} | {k} | {2 * n * k} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
