"""Logit divergence math: KL over top-k sets with a tail bucket, and its summary statistics.

Pure functions: `qgate verify` recomputes the per-position values from the stored
logprobs, and the summary from those values.

Approximation of KL(reference || candidate) from top-k logprobs. Each side
reports its top-k tokens (vLLM also adds the scored token itself). Over the
union U of both sets:

- a token that a side reported gets that side's probability;
- a token a side did not report lies in that side's tail (mass 1 - sum of
  its reported probabilities). It gets an equal share of that tail among the
  side's missing union tokens, capped at the side's smallest reported
  probability (a token outside the top-k cannot be likelier than the k-th);
- what is left of each tail forms one bucket, compared like a token.

Probabilities are floored at 1e-10 before the logarithm so a tail that the
top-k fully covers cannot yield an infinite KL. When both sides report every
token with non-zero probability the result is the exact KL. This is the
usual top-k shortcut (llama.cpp's `--kl-divergence` stores full logits and
is exact; we cannot fetch full vocabularies over HTTP), and it
underestimates mass moved between tokens outside both top-k sets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import Field

from qgate.core.records import Record
from qgate.quality.records import DivergenceRun

FLOOR = 1e-10


class PositionDivergence(Record):
    """Divergence values at one teacher-forced position."""

    kld: float = Field(description="KL(reference || candidate), top-k union plus tail.")
    top1_agree: bool = Field(description="Both sides' most likely tokens are equal.")
    delta_p: float = Field(description="p_candidate - p_reference of the scored token.")


class DivergenceSummary(Record):
    """Summary statistics over every scored position (llama.cpp's KLD statistics)."""

    sequences: int = Field(description="Sequences scored.")
    positions: int = Field(description="Positions scored in all.")
    mean_kld: float = Field(description="Mean KL.")
    median_kld: float = Field(description="Median KL.")
    p90_kld: float = Field(description="90th percentile of KL (linear interpolation).")
    p99_kld: float = Field(description="99th percentile of KL.")
    p999_kld: float = Field(description="99.9th percentile of KL.")
    max_kld: float = Field(description="Largest KL.")
    top1_agreement: float = Field(description="Share of positions whose top-1 tokens agree.")
    mean_abs_delta_p: float = Field(description="Mean |delta p| of the scored token.")
    p99_abs_delta_p: float = Field(description="99th percentile of |delta p|.")


def _side_probs(
    lp: Mapping[int, float], union: Sequence[int], top_k: int | None
) -> tuple[list[float], float]:
    """Probabilities of one side over `union`, and what remains of its tail."""
    exp = math.exp
    reported = {t: exp(v) for t, v in lp.items()}
    tail = max(0.0, 1.0 - sum(reported.values()))
    # vLLM adds the scored token to the top-k when it ranks lower; the cap for
    # unreported tokens is the k-th probability, not that extra token's.
    ranked = sorted(reported.values(), reverse=True)
    k = len(ranked) if top_k is None else max(1, min(top_k, len(ranked)))
    smallest = ranked[k - 1] if ranked else 1.0
    missing = len(union) - len(reported)  # the union holds every reported token
    share = min(tail / missing, smallest) if missing else 0.0
    get = reported.get
    return [get(t, share) for t in union], max(0.0, tail - share * missing)


def _top1(lp: Mapping[int, float]) -> int:
    # Ties go to the smaller token id so the choice is deterministic.
    best = max(lp.values())
    return min([t for t, v in lp.items() if v == best])


def position_divergence(
    ref: Mapping[int, float], cand: Mapping[int, float], token: int, top_k: int | None = None
) -> PositionDivergence:
    """KL, top-1 agreement and delta-p at one position from both sides' top-k logprobs.

    `ref` and `cand` map token id to logprob; `token` is the teacher-forced
    token (the reference's greedy choice) whose probability change is delta-p.
    `top_k` is the k requested (None: every reported token counts as top-k).
    Plain floats, not numpy: at k of about 20 numpy's per-call cost dominates.
    `qgate verify` re-derives every stored position with its batch form
    (qgate/quality/divergence_batch.py, bit for bit the same: change both).
    """
    if not ref or not cand:
        raise ValueError("both sides need at least one logprob")
    union = sorted({*ref, *cand})
    p, p_tail = _side_probs(ref, union, top_k)
    q, q_tail = _side_probs(cand, union, top_k)
    log = math.log
    # summed from a list, not a generator: the same terms in the same order, less overhead
    # (run calls this for every scored position)
    kld = sum(
        [
            pi * (log(pi if pi > FLOOR else FLOOR) - log(qi if qi > FLOOR else FLOOR))
            for pi, qi in zip([*p, p_tail], [*q, q_tail], strict=True)
            if pi > 0
        ]
    )
    idx = union.index(token) if token in ref or token in cand else None
    p_tok = p[idx] if idx is not None else 0.0
    q_tok = q[idx] if idx is not None else 0.0
    # Float rounding can make an exact-zero KL a tiny negative number.
    return PositionDivergence(
        kld=max(0.0, kld), top1_agree=_top1(ref) == _top1(cand), delta_p=q_tok - p_tok
    )


def exact_kld(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p || q) of two full distributions (for tests and for reference)."""
    mask = p > 0
    return float(np.sum(p[mask] * (np.log(p[mask]) - np.log(np.maximum(q[mask], FLOOR)))))


def _percentile(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q, method="linear"))


def summarize_divergence(run: DivergenceRun) -> DivergenceSummary:
    """Summary statistics of every position of a divergence run (all zeros when empty)."""
    kld = np.array([v for s in run.sequences for v in s.kld], dtype=np.float64)
    agree = np.array([v for s in run.sequences for v in s.top1_agree], dtype=bool)
    dp = np.abs(np.array([v for s in run.sequences for v in s.delta_p], dtype=np.float64))
    if kld.size == 0:
        return DivergenceSummary(
            sequences=len(run.sequences),
            positions=0,
            mean_kld=0.0,
            median_kld=0.0,
            p90_kld=0.0,
            p99_kld=0.0,
            p999_kld=0.0,
            max_kld=0.0,
            top1_agreement=0.0,
            mean_abs_delta_p=0.0,
            p99_abs_delta_p=0.0,
        )
    return DivergenceSummary(
        sequences=len(run.sequences),
        positions=int(kld.size),
        mean_kld=float(kld.mean()),
        median_kld=_percentile(kld, 50),
        p90_kld=_percentile(kld, 90),
        p99_kld=_percentile(kld, 99),
        p999_kld=_percentile(kld, 99.9),
        max_kld=float(kld.max()),
        top1_agreement=float(agree.mean()) if agree.size else 0.0,
        mean_abs_delta_p=float(dp.mean()) if dp.size else 0.0,
        p99_abs_delta_p=_percentile(dp, 99) if dp.size else 0.0,
    )


def reverse_klds(run: DivergenceRun) -> list[list[float]] | None:
    """KL(candidate || reference) per position of every sequence, from the stored top-k
    logprobs of both sides; None when a sequence lacks them (reports before schema 2)."""
    out: list[list[float]] = []
    for s in run.sequences:
        raw = (
            s.reference_top_ids,
            s.reference_top_logprobs,
            s.candidate_top_ids,
            s.candidate_top_logprobs,
        )
        if any(r is None for r in raw):
            return None
        rid, rlp, cid, clp = raw
        assert rid is not None and rlp is not None and cid is not None and clp is not None
        out.append(
            [
                position_divergence(
                    dict(zip(c_ids, c_lp, strict=True)),
                    dict(zip(r_ids, r_lp, strict=True)),
                    tok,
                    run.top_k,
                ).kld
                for r_ids, r_lp, c_ids, c_lp, tok in zip(
                    rid, rlp, cid, clp, s.token_ids, strict=True
                )
            ]
        )
    return out
