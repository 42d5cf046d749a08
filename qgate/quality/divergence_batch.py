"""`position_divergence` over many positions at once: what `qgate verify` re-derives a
divergence run's stored values with, leaving only the positions it cannot vouch for to
`position_divergence` itself.

The values are `position_divergence`'s bit for bit, not merely close: the same operations on
the same floats in the same order. Every exp and log is the C library's (`math.exp`,
`math.log`, as position_divergence calls them: numpy's own may round differently on some
CPUs), each sum adds left to right as this Python's `sum()` does (Neumaier's compensated sum
from 3.12 on), and the rest is elementwise IEEE arithmetic, which numpy and Python round
alike. Positions are grouped by how many ids each side reported (20 or 21 for a top-20 run)
and each group is one set of row-wise array operations.

Positions that `position_divergence` treats specially are not computed but marked irregular,
for the caller to hand to it: a side with no ids, ids and logprobs of different lengths, an id
reported twice by one side (the dict keeps the last), a logprob that is NaN or above 1 (a
probability's is at most 0; exp of a large one overflows, which position_divergence raises
on). So are all positions when an id or the scored token does not fit in int64.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

from qgate.quality.divergence import FLOOR

__all__ = ["BatchDivergence", "batch_divergence"]

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

_BLOCK = 1 << 21  # ids handled at once: rows x both sides' ids
_NO_ID = np.iinfo(np.int64).max
_COMPENSATED = sys.version_info >= (3, 12)  # sum() of floats: Neumaier's algorithm


@dataclass(frozen=True)
class BatchDivergence:
    """Per-position values; those of irregular positions are meaningless."""

    kld: Floats
    top1_agree: Bools
    delta_p: Floats
    regular: Bools
    """False where the caller must use `position_divergence` (module docstring)."""


def _libm(fn: Callable[[float], float], x: Floats) -> Floats:
    """`fn` (math.exp or math.log) of every element."""
    return np.fromiter(map(fn, x.ravel().tolist()), np.float64, x.size).reshape(x.shape)


def _log(x: Floats) -> Floats:
    """log(max(x, FLOOR)), position_divergence's floored logarithm."""
    return _libm(math.log, np.maximum(x, FLOOR))


def _python_sum(terms: Floats) -> Floats:
    """Each row's `sum()` as this Python computes it, left to right: plainly before 3.12,
    with Neumaier's compensation from 3.12 on. A zero term changes neither sum, so zeros
    stand for the terms position_divergence leaves out."""
    total = terms[:, 0] + 0.0
    comp = np.zeros_like(total)
    for x in terms.T[1:]:
        if not _COMPENSATED:
            total = total + x
            continue
        t = total + x
        comp += np.where(np.abs(total) >= np.abs(x), (total - t) + x, (x - t) + total)
        total = t
    if not _COMPENSATED:
        return total
    with np.errstate(invalid="ignore"):
        return np.where((comp != 0) & np.isfinite(comp), total + comp, total)


@dataclass(frozen=True)
class _Flat:
    """One side's reported ids, logprobs, probabilities and their floored logs, every
    position's after the previous one's."""

    ids: Ints
    logprobs: Floats
    probs: Floats
    logs: Floats
    count: Ints  # per position; 0 where `usable` is False
    start: Ints
    usable: Bools  # ids given, as many as logprobs

    @classmethod
    def of(cls, ids: Sequence[Sequence[int]], lps: Sequence[Sequence[float]], n: int) -> _Flat:
        count = np.fromiter(map(len, ids), np.int64, n)
        usable = (count > 0) & (count == np.fromiter(map(len, lps), np.int64, n))
        if not usable.all():  # keep ids and logprobs aligned: drop the unusable positions'
            keep = usable.tolist()
            ids = [row if ok else () for row, ok in zip(ids, keep, strict=True)]
            lps = [row if ok else () for row, ok in zip(lps, keep, strict=True)]
            count = np.where(usable, count, 0)
        total = int(count.sum())
        flat_ids = np.fromiter(chain.from_iterable(ids), np.int64, total)
        flat_lps = np.fromiter(chain.from_iterable(lps), np.float64, total)
        with np.errstate(invalid="ignore"):
            fine = flat_lps <= 1.0  # NaN fails every comparison
        # a logprob that is not fine makes its position irregular (`_Side`); 0 keeps exp finite.
        # The libm calls take most of the time: fed straight from the lists where they can be.
        source = chain.from_iterable(lps) if fine.all() else np.where(fine, flat_lps, 0.0).tolist()
        exps = list(map(math.exp, source))
        probs = np.array(exps, dtype=np.float64)
        if probs.size and probs.min() <= FLOOR:
            exps = np.maximum(probs, FLOOR).tolist()
        logs = np.fromiter(map(math.log, exps), np.float64, total)
        return cls(flat_ids, flat_lps, probs, logs, count, np.cumsum(count) - count, usable)

    def rows(self, where: Ints, width: int) -> _Side:
        """Positions `where`, each of `width` entries, as 2-D arrays."""
        at = self.start[where][:, None] + np.arange(width)
        return _Side(self.ids[at], self.logprobs[at], self.probs[at], self.logs[at])


@dataclass(frozen=True)
class _Side:
    """One side's entries at a block of positions of one width (one row each)."""

    ids: Ints
    logprobs: Floats
    probs: Floats
    logs: Floats

    def irregular(self) -> Bools:
        """A logprob NaN or above 1, or an id twice."""
        with np.errstate(invalid="ignore"):
            fine = (self.logprobs <= 1.0).all(axis=1)
        ordered = np.sort(self.ids, axis=1)
        out: Bools = ~fine | (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        return out

    def top1(self) -> Ints:
        """The most likely id, ties to the smallest."""
        best = self.logprobs.max(axis=1)
        out: Ints = np.where(self.logprobs == best[:, None], self.ids, _NO_ID).min(axis=1)
        return out

    def shares(self, missing: Ints, top_k: int | None) -> tuple[Floats, Floats]:
        """Each missing union token's share of the tail (capped at the k-th probability), and
        what is left of the tail."""
        width = self.ids.shape[1]
        k = width if top_k is None else max(1, min(top_k, width))
        smallest = np.partition(self.probs, width - k, axis=1)[:, width - k]
        tail = np.maximum(0.0, 1.0 - _python_sum(self.probs))
        share = np.where(missing > 0, np.minimum(tail / np.maximum(missing, 1), smallest), 0.0)
        return share, np.maximum(0.0, tail - share * missing)

    def token_prob(self, tokens: Ints) -> tuple[Floats, Bools]:
        """The probability reported for each row's scored token, and whether it was."""
        hit = self.ids == tokens[:, None]
        return np.where(hit, self.probs, 0.0).sum(axis=1), hit.any(axis=1)


def batch_divergence(
    ref_ids: Sequence[Sequence[int]],
    ref_logprobs: Sequence[Sequence[float]],
    cand_ids: Sequence[Sequence[int]],
    cand_logprobs: Sequence[Sequence[float]],
    tokens: Sequence[int],
    top_k: int | None,
) -> BatchDivergence:
    """KL, top-1 agreement and delta-p at every position (`position_divergence`'s arguments,
    one row per position: each side's ids and logprobs, the scored token)."""
    n = len(tokens)
    out = BatchDivergence(
        np.full(n, np.nan), np.zeros(n, bool), np.full(n, np.nan), np.zeros(n, bool)
    )
    try:
        tok = np.fromiter(tokens, np.int64, n)
        ref = _Flat.of(ref_ids, ref_logprobs, n)
        cand = _Flat.of(cand_ids, cand_logprobs, n)
    except OverflowError:  # an id beyond int64
        return out
    todo = np.flatnonzero(ref.usable & cand.usable)
    shape = ref.count[todo] * (int(cand.count.max(initial=0)) + 1) + cand.count[todo]
    order = np.argsort(shape, kind="stable")
    for group in np.split(todo[order], np.flatnonzero(np.diff(shape[order])) + 1):
        if not group.size:
            continue
        wr, wc = int(ref.count[group[0]]), int(cand.count[group[0]])
        step = max(1, _BLOCK // (wr + wc))
        for at in range(0, group.size, step):
            rows = group[at : at + step]
            _fill(out, rows, ref.rows(rows, wr), cand.rows(rows, wc), tok[rows], top_k)
    return out


def _fill(
    out: BatchDivergence, rows: Ints, ref: _Side, cand: _Side, tokens: Ints, top_k: int | None
) -> None:
    """The values at positions `rows`, whose sides have one width each, computed as
    position_divergence computes them: over both sides' ids sorted, then the tail bucket."""
    wr, wc = ref.ids.shape[1], cand.ids.shape[1]
    ids = np.concatenate([ref.ids, cand.ids], axis=1)
    order = np.argsort(ids, axis=1, kind="stable")  # of an id both report, ref's slot first
    ids = np.take_along_axis(ids, order, axis=1)
    from_ref = order < wr
    pair = ids[:, 1:] == ids[:, :-1]
    twice = (pair & (from_ref[:, 1:] == from_ref[:, :-1])).any(axis=1)
    shared = pair.sum(axis=1)
    p_share, p_rest = ref.shares(wc - shared, top_k)  # the union's ids the reference lacks
    q_share, q_rest = cand.shares(wr - shared, top_k)
    probs = np.take_along_axis(np.concatenate([ref.probs, cand.probs], axis=1), order, axis=1)
    logs = np.take_along_axis(np.concatenate([ref.logs, cand.logs], axis=1), order, axis=1)
    first = np.ones(ids.shape, dtype=bool)  # each union id's first slot: the one that counts
    first[:, 1:] = ~pair
    paired = np.zeros(ids.shape, dtype=bool)  # a reference slot the candidate's follows
    paired[:, :-1] = pair
    after = np.zeros(ids.shape)
    after[:, :-1] = logs[:, 1:]
    log_share = _log(np.stack([p_share, q_share, p_rest, q_rest]))
    p = np.where(from_ref, probs, p_share[:, None])
    log_p = np.where(from_ref, logs, log_share[0][:, None])
    log_q = np.where(from_ref, np.where(paired, after, log_share[1][:, None]), logs)
    terms = np.where(first & (p > 0), p * (log_p - log_q), 0.0)
    tail = np.where(p_rest > 0, p_rest * (log_share[2] - log_share[3]), 0.0)
    kld = _python_sum(np.concatenate([terms, tail[:, None]], axis=1))
    p_tok, p_has = ref.token_prob(tokens)
    q_tok, q_has = cand.token_prob(tokens)
    out.kld[rows] = np.maximum(0.0, kld)
    out.top1_agree[rows] = ref.top1() == cand.top1()
    out.delta_p[rows] = np.where(q_has, q_tok, np.where(p_has, q_share, 0.0)) - np.where(
        p_has, p_tok, np.where(q_has, p_share, 0.0)
    )
    out.regular[rows] = ~(ref.irregular() | cand.irregular() | twice)
