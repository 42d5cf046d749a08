from __future__ import annotations

import math
import random
import sys

import numpy as np
import pytest

from qgate.quality import divergence_batch
from qgate.quality.divergence import position_divergence
from qgate.quality.divergence_batch import BatchDivergence, batch_divergence

Side = tuple[list[int], list[float]]


def _side(rng: random.Random, token: int) -> Side:
    """A side's top-k: 1 to 22 ids near the token, logprobs of a distribution with a tail;
    sometimes tied, sometimes with a -inf, sometimes covering (nearly) all the mass."""
    ids = rng.sample(range(token - 12, token + 30), rng.choice([1, 2, 3, 5, 20, 21, 22]))
    logits = [rng.gauss(0, 3) for _ in ids]
    if rng.random() < 0.15:
        logits = [float(round(x)) for x in logits]  # ties
    mass = rng.choice([1.0, 1.0 + 1e-12, 1.0000001, 1.05, 3.0])
    z = math.log(sum(math.exp(x) for x in logits) * mass)
    lps = [x - z for x in logits]
    if rng.random() < 0.05:
        lps[-1] = -math.inf
    return ids, lps


def _positions(n: int, seed: int = 0) -> list[tuple[Side, Side, int]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        token = rng.randrange(100, 200)
        ref = _side(rng, token)
        cand = _side(rng, token)
        if rng.random() < 0.4:  # the same ids, a little mass moved
            cand = (list(ref[0]), [lp + rng.gauss(0, 0.01) for lp in ref[1]])
        out.append((ref, cand, token))
    return out


def _batch(positions: list[tuple[Side, Side, int]], top_k: int | None) -> BatchDivergence:
    return batch_divergence(
        [r[0] for r, _, _ in positions],
        [r[1] for r, _, _ in positions],
        [c[0] for _, c, _ in positions],
        [c[1] for _, c, _ in positions],
        [t for _, _, t in positions],
        top_k,
    )


def _one(ref: Side, cand: Side, token: int, top_k: int | None) -> tuple[float, bool, float]:
    pos = position_divergence(
        dict(zip(*ref, strict=True)), dict(zip(*cand, strict=True)), token, top_k
    )
    return pos.kld, pos.top1_agree, pos.delta_p


@pytest.mark.parametrize("top_k", [20, None, 2, 0])
def test_every_value_is_position_divergences_bit_for_bit(top_k: int | None) -> None:
    positions = _positions(3000)
    got = _batch(positions, top_k)
    assert got.regular.all()
    for i, (ref, cand, token) in enumerate(positions):
        kld, agree, delta_p = _one(ref, cand, token, top_k)
        assert (got.kld[i], got.top1_agree[i], got.delta_p[i]) == (kld, agree, delta_p), i


def test_what_position_divergence_treats_apart_is_left_to_it() -> None:
    positions = _positions(8, seed=1)
    (r_ids, r_lps), cand, token = positions[0]
    odd = [
        (([], []), cand, token),  # the reference reported nothing
        ((r_ids, r_lps[:-1]), cand, token),  # an id without its logprob
        (([*r_ids, r_ids[0]], [*r_lps, -9.0]), cand, token),  # an id twice
        ((r_ids, [math.nan, *r_lps[1:]]), cand, token),
        ((r_ids, [math.inf, *r_lps[1:]]), cand, token),
        ((r_ids, [800.0, *r_lps[1:]]), cand, token),  # exp overflows
    ]
    got = _batch(positions + odd, 20)
    assert got.regular.tolist() == [True] * len(positions) + [False] * len(odd)
    for i, (ref, c, t) in enumerate(positions):  # the others are computed all the same
        assert got.kld[i] == _one(ref, c, t, 20)[0]


def test_an_id_beyond_int64_leaves_every_position_to_position_divergence() -> None:
    positions = _positions(4, seed=2)
    (ids, lps), cand, token = positions[1]
    positions[1] = (([2**64, *ids[1:]], lps), cand, token)
    assert not _batch(positions, 20).regular.any()


def test_no_positions() -> None:
    got = batch_divergence([], [], [], [], [], 20)
    assert got.kld.size == 0 and got.regular.size == 0


def _plain(values: list[float]) -> float:
    """sum() of floats before Python 3.12: left to right."""
    total = 0.0
    for x in values:
        total += x
    return total


def _neumaier(values: list[float]) -> float:
    """sum() of floats from Python 3.12 on: Neumaier's compensated sum, as CPython has it."""
    total, comp = values[0] + 0.0, 0.0
    for x in values[1:]:
        t = total + x
        comp += (total - t) + x if abs(total) >= abs(x) else (x - t) + total
        total = t
    return total + comp if comp and math.isfinite(comp) else total


@pytest.mark.parametrize("compensated", [False, True])
def test_rows_add_up_as_pythons_sum(compensated: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    rows = [[rng.gauss(0, 1) * 10 ** rng.randint(-18, 3) for _ in range(21)] for _ in range(500)]
    rows.append([1.0, 1e-16, 1e-16, -1.0, 0.0, 3e-17])  # the two sums differ
    assert _plain(rows[-1]) != _neumaier(rows[-1])
    monkeypatch.setattr(divergence_batch, "_COMPENSATED", compensated)
    got = divergence_batch._python_sum(np.array([r + [0.0] * (21 - len(r)) for r in rows]))
    assert got.tolist() == [(_neumaier if compensated else _plain)(r) for r in rows]
    if compensated == (sys.version_info >= (3, 12)):
        assert got.tolist() == [sum(r) for r in rows]  # this Python's own
