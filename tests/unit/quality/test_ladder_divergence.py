"""The context ladder's per-bucket divergence: which positions compare, the KL math (the
divergence suite's), parsing a vLLM chat answer's logprobs, and the per-bucket limits."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from qgate.gates.ladder import ladder_divergence_verdicts
from qgate.profile import ContextLadder
from qgate.quality.divergence_suite import ScoreSet, SequenceScores, build_divergence_run
from qgate.quality.ladder_divergence import (
    bucket_divergence,
    compared_positions,
    generated_of,
    generated_problem,
    item_divergence,
    request_fields,
)
from qgate.quality.records import GeneratedLogprobs, ItemRecord, SuiteRun

VOCAB = 50
K = 5


def _gen(
    tokens: list[int], rng: np.random.Generator, prompt: str | None = "p"
) -> GeneratedLogprobs:
    """Each position: a random distribution over VOCAB tokens whose most likely token is the
    generated one; its top-K, ids ascending."""
    ids, lps = [], []
    for tok in tokens:
        logits = rng.normal(scale=2.0, size=VOCAB)
        logits[tok] = logits.max() + 1.0
        lp = logits - np.log(np.exp(logits).sum())
        top = sorted(int(t) for t in np.argsort(-lp)[:K])
        ids.append(top)
        lps.append([float(lp[t]) for t in top])
    return GeneratedLogprobs(
        prompt_ids_sha256=prompt, token_ids=tokens, top_ids=ids, top_logprobs=lps
    )


def test_positions_after_the_first_difference_are_not_compared() -> None:
    rng = np.random.default_rng(0)
    ref = _gen([1, 2, 3, 4, 5], rng)
    # the same tokens again after the difference: different contexts, never compared
    cand = _gen([1, 2, 9, 4, 5], rng)
    assert compared_positions(ref, cand) == 3  # the common prefix and the first difference
    assert len(item_divergence(ref, cand, K)) == 3
    assert compared_positions(ref, _gen([1, 2, 3, 4, 5], rng)) == 5
    assert compared_positions(ref, _gen([1, 2, 3], rng)) == 3  # the shorter answer ends
    assert compared_positions(ref, _gen([7, 2, 3, 4, 5], rng)) == 1  # the first always compares
    # prompt ids not known identical: nothing compares
    assert compared_positions(ref, _gen([1, 2, 3, 4, 5], rng, prompt="other")) == 0
    assert compared_positions(_gen([1], rng, prompt=None), _gen([1], rng, prompt=None)) == 0


def test_the_kl_equals_the_divergence_suites_on_the_same_numbers() -> None:
    rng = np.random.default_rng(1)
    tokens = [3, 8, 1, 4]
    ref, cand = _gen(tokens, rng), _gen(tokens, rng)

    def scores(role: str, g: GeneratedLogprobs) -> ScoreSet:
        seq = SequenceScores(
            id="s",
            prompt_sha256="0" * 64,
            prompt_ids=[0],
            token_ids=g.token_ids,
            top_ids=g.top_ids,
            top_logprobs=g.top_logprobs,
        )
        return ScoreSet(role=role, data_sha256="0" * 64, top_k=K, tokens=4, sequences=[seq])  # type: ignore[arg-type]

    suite = build_divergence_run(scores("reference", ref), scores("candidate", cand))
    mine = item_divergence(ref, cand, K)
    assert [p.kld for p in mine] == suite.sequences[0].kld
    assert [p.top1_agree for p in mine] == suite.sequences[0].top1_agree
    assert any(k > 0 for k in suite.sequences[0].kld)


def _answer(tokens: list[tuple[int, float, list[tuple[int, float]]]], prompt: list[int]) -> Any:
    content = [
        {
            "token": f"token_id:{tok}",
            "logprob": lp,
            "top_logprobs": [{"token": f"token_id:{t}", "logprob": v} for t, v in top],
        }
        for tok, lp, top in tokens
    ]
    return {
        "choices": [{"message": {"content": "x"}, "logprobs": {"content": content}}],
        "prompt_token_ids": prompt,
    }


def test_a_vllm_chat_answer_parses_into_sorted_positions_with_the_generated_token() -> None:
    half = math.log(0.5)
    answer = _answer(
        [
            (7, half, [(7, half), (3, math.log(0.3))]),
            # the generated token ranked below the top-k: its own logprob is added
            (9, math.log(0.01), [(2, half), (3, math.log(0.3))]),
        ],
        [1, 2, 3],
    )
    g = generated_of(answer)
    assert g is not None
    assert g.token_ids == [7, 9]
    assert g.top_ids == [[3, 7], [2, 3, 9]]
    assert g.top_logprobs[1] == [half, math.log(0.3), math.log(0.01)]
    assert g.prompt_ids_sha256 is not None and len(g.prompt_ids_sha256) == 64
    assert generated_problem(g) is None
    # an entry without its number, text tokens (no return_tokens_as_token_ids), or no
    # logprobs at all: nothing recorded
    broken = _answer([(7, half, [(7, half)])], [1])
    del broken["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["logprob"]
    assert generated_of(broken) is None
    answer["choices"][0]["logprobs"]["content"][0]["token"] = "The"
    assert generated_of(answer) is None
    assert generated_of({"choices": [{"message": {"content": "x"}}]}) is None
    assert request_fields(0) == {}
    assert request_fields(20)["top_logprobs"] == 20


def test_logits_instead_of_logprobs_are_refused() -> None:
    g = GeneratedLogprobs(
        prompt_ids_sha256="p", token_ids=[1], top_ids=[[1, 2]], top_logprobs=[[-0.1, -0.2]]
    )
    problem = generated_problem(g)
    assert problem is not None and "sum above 1" in problem
    bad = g.model_copy(update={"token_ids": [5]})
    assert "not among its ids" in (generated_problem(bad) or "")


def _run(role: str, gens: list[GeneratedLogprobs | None]) -> SuiteRun:
    items = [
        ItemRecord(
            id=f"context.1024.i{i}.t800.d10",
            prompt_sha256="0" * 64,
            output="",
            answer=None,
            expected="AB-1234",
            correct=False,
            generated=g,
        )
        for i, g in enumerate(gens)
    ]
    return SuiteRun(suite="context.1024", role=role, data_sha256="0" * 64, items=items)  # type: ignore[arg-type]


def test_a_bucket_limit_fails_above_its_kl_and_passes_below() -> None:
    rng = np.random.default_rng(2)
    refs = [_gen([1, 2, 3], rng) for _ in range(3)]
    cands = [_gen([1, 2, 3], rng) for _ in range(3)]
    runs = [_run("reference", list(refs)), _run("candidate", list(cands))]
    d = bucket_divergence(runs[0], runs[1], K)
    assert (d.items, d.positions, d.skipped) == (3, 9, 0)
    assert d.mean_kld is not None and d.mean_kld > 0.01
    spec = ContextLadder(up_to=1024, top_k=K, max_mean_kld=0.01, min_top1_agreement=0.0)
    (mean, top1) = ladder_divergence_verdicts(spec, runs)
    assert mean.gate == "context.1024.max_mean_kld" and not mean.passed
    assert mean.observed == pytest.approx(d.mean_kld) and mean.n == 9
    assert "9 positions of identical context in 3 items" in mean.reason
    assert top1.gate == "context.1024.min_top1_agreement" and top1.passed
    loose = spec.model_copy(update={"max_mean_kld": 100.0})
    assert all(v.passed for v in ladder_divergence_verdicts(loose, runs))
    # identical distributions on both sides: zero KL, full agreement
    same = bucket_divergence(runs[0], _run("candidate", list(refs)), K)
    assert same.mean_kld == 0.0 and same.top1_agreement == 1.0


def test_a_bucket_without_logprobs_fails_a_set_limit_and_none_set_gives_no_verdict() -> None:
    runs = [_run("reference", [None, None]), _run("candidate", [None, None])]
    spec = ContextLadder(up_to=1024, max_max_kld=1.0)
    (v,) = ladder_divergence_verdicts(spec, runs)
    assert not v.passed and v.observed is None and "no position compared" in v.reason
    assert ladder_divergence_verdicts(ContextLadder(up_to=1024), runs) == []
    (missing,) = ladder_divergence_verdicts(spec, runs[:1])
    assert not missing.passed and "no run of both sides" in missing.reason
