from __future__ import annotations

import math

import pytest
from helpers.report_synthetic import divergence_sequence

from qgate.errors import VerificationFailed
from qgate.quality.divergence import position_divergence
from qgate.quality.records import DivergenceRun
from qgate.report.verify.divergence_screen import suspects
from qgate.report.verify.rederive import Rederived, rederive_divergence

TOL = (1e-9, 1e-12)  # verify's (rederive.py)


def _run(n: int = 3) -> DivergenceRun:
    return DivergenceRun(
        data_sha256="0" * 64,
        top_k=20,
        tokens=4,
        sequences=[divergence_sequence(j) for j in range(n)],
    )


def test_a_genuine_run_leaves_nothing_to_re_derive_one_by_one() -> None:
    assert suspects(_run(), *TOL) == [[], [], []]


def test_the_edited_positions_are_left_to_position_divergence() -> None:
    run = _run()
    run.sequences[0].kld[3] *= 1 + 1e-6
    run.sequences[2].delta_p[1] = math.nan
    run.sequences[2].top1_agree[0] = not run.sequences[2].top1_agree[0]
    assert suspects(run, *TOL) == [[3], [], [0, 1]]


def test_within_the_tolerance_is_confirmed_as_math_isclose_would() -> None:
    run = _run(1)
    seq = run.sequences[0]
    seq.kld[1] = math.nextafter(seq.kld[1], 1.0)
    seq.kld[2] = seq.kld[2] * (1 + 2e-9)
    assert suspects(run, *TOL) == [[2]]
    assert suspects(run, 1e-8, 1e-12) == [[]]


def test_a_sequence_it_cannot_screen_is_left_whole() -> None:
    run = _run()
    run.sequences[1].reference_top_ids = None
    run.sequences[2].kld.pop()
    assert suspects(run, *TOL) == [[], [0, 1, 2, 3], [0, 1, 2, 3]]


def test_a_position_the_batch_leaves_alone_is_judged_by_position_divergence() -> None:
    # the candidate names an id twice: position_divergence's dict keeps the later logprob
    run = _run(1)
    seq = run.sequences[0]
    assert seq.candidate_top_ids is not None and seq.candidate_top_logprobs is not None
    assert seq.reference_top_ids is not None and seq.reference_top_logprobs is not None
    seq.candidate_top_ids[1].append(seq.candidate_top_ids[1][0])
    seq.candidate_top_logprobs[1].append(-3.0)
    pos = position_divergence(
        dict(zip(seq.reference_top_ids[1], seq.reference_top_logprobs[1], strict=True)),
        dict(zip(seq.candidate_top_ids[1], seq.candidate_top_logprobs[1], strict=True)),
        seq.token_ids[1],
        run.top_k,
    )
    seq.kld[1], seq.top1_agree[1], seq.delta_p[1] = pos.kld, pos.top1_agree, pos.delta_p
    assert suspects(run, *TOL) == [[1]]
    out = Rederived()
    rederive_divergence(run, out, required=True)
    assert out.positions == 4
    seq.kld[1] *= 1.01
    with pytest.raises(VerificationFailed, match="divergence sequence s0 position 1: stored"):
        rederive_divergence(run, Rederived(), required=True)


def test_the_first_failure_is_named_as_before() -> None:
    run = _run()
    run.sequences[1].kld[2] *= 2
    run.sequences[1].kld[3] *= 2
    run.sequences[2].kld[0] *= 2
    with pytest.raises(VerificationFailed, match="divergence sequence s1 position 2: stored"):
        rederive_divergence(run, Rederived(), required=True)
