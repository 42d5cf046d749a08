"""Which stored divergence positions `qgate verify` must re-derive one at a time.

`batch_divergence` (qgate/quality/divergence_batch.py) re-derives every position of a run at
once, bit for bit as `position_divergence` does; a position whose stored values it confirms,
by the very test verify applies (math.isclose's, with verify's tolerances), needs nothing
more. The others (none in a genuine report) and those batch_divergence leaves to
position_divergence go through rederive.py's loop position by position, as every position
did before: it decides, and names the first that fails.
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import numpy.typing as npt

from qgate.quality.divergence_batch import batch_divergence
from qgate.quality.records import DivergenceRun, DivergenceSequence

__all__ = ["suspects"]

_CHUNK = 1 << 16  # positions screened at once (bounds the memory)


def _isclose(
    a: npt.NDArray[np.float64], b: npt.NDArray[np.float64], rel_tol: float, abs_tol: float
) -> npt.NDArray[np.bool_]:
    """math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol) elementwise, step by step as
    CPython computes it (equal, else both finite and within either bound)."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(b - a)
        within = (diff <= np.abs(rel_tol * b)) | (diff <= np.abs(rel_tol * a)) | (diff <= abs_tol)
        close: npt.NDArray[np.bool_] = (a == b) | (np.isfinite(a) & np.isfinite(b) & within)
    return close


def _screenable(seq: DivergenceSequence) -> bool:
    """Logprobs stored and every per-position list as long as the tokens (else verify fails or
    lists the sequence before it reaches a position)."""
    lists = (
        seq.kld,
        seq.top1_agree,
        seq.delta_p,
        seq.reference_top_ids,
        seq.reference_top_logprobs,
        seq.candidate_top_ids,
        seq.candidate_top_logprobs,
    )
    return all(x is not None and len(x) == len(seq.token_ids) for x in lists)


def _confirmed(
    seqs: list[DivergenceSequence], top_k: int, rel_tol: float, abs_tol: float
) -> npt.NDArray[np.bool_]:
    """Per position of `seqs` (all screenable), whether the batch confirms its stored values."""

    tokens = list(chain.from_iterable(s.token_ids for s in seqs))
    got = batch_divergence(
        list(chain.from_iterable(s.reference_top_ids or () for s in seqs)),
        list(chain.from_iterable(s.reference_top_logprobs or () for s in seqs)),
        list(chain.from_iterable(s.candidate_top_ids or () for s in seqs)),
        list(chain.from_iterable(s.candidate_top_logprobs or () for s in seqs)),
        tokens,
        top_k,
    )
    n = len(tokens)
    try:
        kld = np.fromiter(chain.from_iterable(s.kld for s in seqs), np.float64, n)
        delta_p = np.fromiter(chain.from_iterable(s.delta_p for s in seqs), np.float64, n)
    except OverflowError:  # a stored value too large for a float: position by position
        return np.zeros(n, dtype=bool)
    agree = np.fromiter(chain.from_iterable(s.top1_agree for s in seqs), np.bool_, n)
    confirmed: npt.NDArray[np.bool_] = (
        got.regular
        & (got.top1_agree == agree)
        & _isclose(got.kld, kld, rel_tol, abs_tol)
        & _isclose(got.delta_p, delta_p, rel_tol, abs_tol)
    )
    return confirmed


def suspects(run: DivergenceRun, rel_tol: float, abs_tol: float) -> list[list[int]]:
    """Per sequence of `run`, the positions to re-derive one at a time: those whose stored
    values the batch does not confirm; all of a sequence it cannot screen."""
    out: list[list[int]] = [list(range(len(s.token_ids))) for s in run.sequences]
    chunk: list[int] = []
    size = 0
    screenable = [j for j, s in enumerate(run.sequences) if _screenable(s)]
    for end, j in enumerate(screenable, start=1):
        chunk.append(j)
        size += len(run.sequences[j].token_ids)
        if size < _CHUNK and end < len(screenable):
            continue
        seqs = [run.sequences[i] for i in chunk]
        ok = _confirmed(seqs, run.top_k, rel_tol, abs_tol)
        bounds = np.cumsum([len(s.token_ids) for s in seqs])[:-1]
        for i, seq_ok in zip(chunk, np.split(ok, bounds), strict=True):
            out[i] = np.flatnonzero(~seq_ok).tolist()
        chunk, size = [], 0
    return out
