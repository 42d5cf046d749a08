from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from qgate.errors import BadInput
from qgate.quality.divergence import exact_kld, position_divergence, summarize_divergence
from qgate.quality.divergence_suite import (
    ScoreSet,
    SequenceScores,
    _token_id,
    build_divergence_run,
    continuations_of,
)
from qgate.quality.records import DivergenceRun, DivergenceSequence


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def _logprobs(p: np.ndarray, ids: list[int] | None = None) -> dict[int, float]:
    ids = list(range(len(p))) if ids is None else ids
    return {i: float(math.log(p[i])) for i in ids}


def test_full_coverage_equals_exact_kl() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        p = _softmax(rng.normal(size=12))
        q = _softmax(rng.normal(size=12))
        pos = position_divergence(_logprobs(p), _logprobs(q), token=3)
        assert pos.kld == pytest.approx(exact_kld(p, q), rel=1e-9, abs=1e-12)
        assert pos.delta_p == pytest.approx(q[3] - p[3])
        assert pos.top1_agree == (int(np.argmax(p)) == int(np.argmax(q)))


def test_identical_inputs_give_zero() -> None:
    rng = np.random.default_rng(1)
    p = _softmax(rng.normal(size=1000))
    top = list(np.argsort(-p)[:20])
    lp = _logprobs(p, [int(t) for t in top])
    pos = position_divergence(lp, dict(lp), token=int(top[0]))
    assert pos.kld == 0.0
    assert pos.top1_agree
    assert pos.delta_p == 0.0


def test_topk_estimate_is_close_and_bounded_for_a_small_perturbation() -> None:
    rng = np.random.default_rng(3)
    logits = rng.normal(scale=3.0, size=2000)
    p = _softmax(logits)
    q = _softmax(logits + rng.normal(scale=0.05, size=2000))
    k = 20
    top_p = [int(t) for t in np.argsort(-p)[:k]]
    top_q = [int(t) for t in np.argsort(-q)[:k]]
    est = position_divergence(_logprobs(p, top_p), _logprobs(q, top_q), token=top_p[0]).kld
    exact = exact_kld(p, q)
    assert est > 0
    # the tail bucket merges tail tokens, which can only lose information
    assert est <= exact * 1.05
    assert est == pytest.approx(exact, rel=0.6)


def test_disjoint_topk_sets_give_large_finite_kl() -> None:
    ref = {1: math.log(0.9), 2: math.log(0.09)}
    cand = {3: math.log(0.9), 4: math.log(0.09)}
    pos = position_divergence(ref, cand, token=1)
    assert math.isfinite(pos.kld)
    assert pos.kld > 1.0
    assert not pos.top1_agree
    # the candidate's token 1 is capped by its tail share (0.01 over two missing tokens)
    assert pos.delta_p == pytest.approx(0.005 - 0.9)


def test_missing_token_never_likelier_than_smallest_reported() -> None:
    ref = {1: math.log(0.5), 2: math.log(0.1)}  # tail 0.4
    cand = {1: math.log(0.5), 2: math.log(0.1), 3: math.log(0.05)}
    pos = position_divergence(cand, ref, token=3)
    # token 3 in `ref` gets min(tail 0.4 / 1, smallest 0.1) = 0.1
    assert pos.delta_p == pytest.approx(0.1 - 0.05)


def test_top1_tie_break_is_deterministic() -> None:
    a = {5: math.log(0.4), 2: math.log(0.4), 9: math.log(0.2)}
    b = {2: math.log(0.4), 5: math.log(0.4), 9: math.log(0.2)}
    assert position_divergence(a, b, token=2).top1_agree


def test_summary_statistics() -> None:
    kld = [float(i) / 1000 for i in range(1000)]
    seqs = [
        DivergenceSequence(
            id=f"s{j}",
            prompt_sha256="0" * 64,
            token_ids=list(range(500)),
            kld=kld[j * 500 : (j + 1) * 500],
            top1_agree=[j == 0] * 500,
            delta_p=[-0.1 if j else 0.2] * 500,
        )
        for j in range(2)
    ]
    s = summarize_divergence(DivergenceRun(data_sha256="x", top_k=20, tokens=500, sequences=seqs))
    assert s.positions == 1000 and s.sequences == 2
    assert s.mean_kld == pytest.approx(0.4995)
    assert s.median_kld == pytest.approx(0.4995)
    assert s.p90_kld == pytest.approx(np.percentile(kld, 90))
    assert s.p99_kld == pytest.approx(0.98901)
    assert s.p999_kld == pytest.approx(np.percentile(kld, 99.9))
    assert s.max_kld == pytest.approx(0.999)
    assert s.top1_agreement == pytest.approx(0.5)
    assert s.mean_abs_delta_p == pytest.approx(0.15)
    assert s.p99_abs_delta_p == pytest.approx(0.2)


def test_summary_of_empty_run() -> None:
    s = summarize_divergence(DivergenceRun(data_sha256="x", top_k=20, tokens=8, sequences=[]))
    assert s.positions == 0 and s.mean_kld == 0.0


def _scores(role: str, shift: float, tokens: list[int]) -> ScoreSet:
    rng = np.random.default_rng(11)
    top_ids, top_lps = [], []
    for _ in tokens:
        p = _softmax(rng.normal(size=6) + np.array([shift, 0, 0, 0, 0, 0]))
        top_ids.append(list(range(6)))
        top_lps.append([float(math.log(x)) for x in p])
    seq = SequenceScores(
        id="a",
        prompt_sha256="0" * 64,
        prompt_ids=[1, 2],
        token_ids=tokens,
        top_ids=top_ids,
        top_logprobs=top_lps,
    )
    return ScoreSet(
        role=role,
        data_sha256="c" * 64,
        top_k=5,
        tokens=len(tokens),  # type: ignore[arg-type]
        sequences=[seq],
    )


def test_build_divergence_run_from_scores() -> None:
    ref = _scores("reference", 0.0, [0, 1, 2])
    same = build_divergence_run(ref, _scores("candidate", 0.0, [0, 1, 2]))
    assert same.sequences[0].kld == [0.0, 0.0, 0.0]
    assert all(same.sequences[0].top1_agree)
    moved = build_divergence_run(ref, _scores("candidate", 1.0, [0, 1, 2]))
    assert all(k > 0 for k in moved.sequences[0].kld)
    assert all(d > 0 for d in moved.sequences[0].delta_p[:1])  # token 0 was boosted
    assert continuations_of(ref)[0].token_ids == [0, 1, 2]
    # round trip through JSON, as the reference cache stores it
    assert ScoreSet.model_validate_json(ref.model_dump_json()) == ref


def test_build_divergence_run_rejects_different_tokens() -> None:
    with pytest.raises(BadInput):
        build_divergence_run(
            _scores("reference", 0.0, [0, 1, 2]), _scores("candidate", 0.0, [0, 1, 3])
        )


def test_token_id_parsing() -> None:
    assert _token_id("token_id:42") == 42
    with pytest.raises(Exception, match="return_tokens_as_token_ids"):
        _token_id("hello")


def test_extra_scored_token_does_not_lower_the_cap() -> None:
    # top_k=2 plus the scored token 9 at a low rank, as vLLM reports it
    ref = {1: math.log(0.6), 2: math.log(0.2), 9: math.log(0.001)}
    cand = {1: math.log(0.6), 3: math.log(0.2), 9: math.log(0.001)}
    pos = position_divergence(ref, cand, token=9, top_k=2)
    # token 3 in ref gets the whole tail 0.199 (cap: the 2nd prob 0.2); same for 2 in cand
    expected = 0.2 * math.log(0.2 / 0.199) + 0.199 * math.log(0.199 / 0.2)
    assert pos.kld == pytest.approx(expected, rel=1e-6)
    # capping at the extra token's 0.001 would have left most of the tail unassigned
    assert position_divergence(ref, cand, token=9).kld > 100 * pos.kld


def _fake_server_app() -> Any:
    from aiohttp import web

    async def tokenize(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"tokens": [len(w) for w in body["prompt"].split()]})

    def _plp(ids: list[int]) -> list[Any]:
        return [None] + [
            {str(t): {"logprob": -0.1}, str(t + 1000): {"logprob": -2.5}} for t in ids[1:]
        ]

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        prompt = body["prompt"]
        batch = prompt if prompt and isinstance(prompt[0], list) else [prompt]
        choices = []
        for i, ids in enumerate(batch):
            if body.get("prompt_logprobs"):
                choices.append({"index": i, "prompt_logprobs": _plp(ids)})
            else:
                toks = [f"token_id:{(sum(ids) + j) % 50}" for j in range(body["max_tokens"])]
                choices.append({"index": i, "logprobs": {"tokens": toks}})
        # answer out of order: the client must sort by index
        return web.json_response({"choices": choices[::-1]})

    app = web.Application()
    app.router.add_post("/tokenize", tokenize)
    app.router.add_post("/v1/completions", completions)
    return app


@pytest.mark.parametrize("batch", [1, 3])
def test_runner_against_a_fake_server(batch: int) -> None:
    import asyncio

    from aiohttp import web

    from qgate.quality.client import SuiteClient
    from qgate.quality.divergence_suite import CorpusPrompt, generate_continuations, score

    async def main() -> tuple[list[Any], list[Any]]:
        runner = web.AppRunner(_fake_server_app())
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}/v1"
        try:
            prompts = [CorpusPrompt(id=f"p{i}", prompt="a bb " * (i + 1)) for i in range(5)]
            async with SuiteClient(url, "m", concurrency=2) as client:
                conts = await generate_continuations(client, prompts, 4)
                scores = await score(client, conts, 1, batch=batch)
            return conts, scores
        finally:
            await runner.cleanup()

    conts, scores = asyncio.run(main())
    assert [c.id for c in conts] == [f"p{i}" for i in range(5)]
    assert conts[1].prompt_ids == [1, 2, 1, 2]
    assert all(len(c.token_ids) == 4 for c in conts)
    assert [s.id for s in scores] == [c.id for c in conts]
    for c, s in zip(conts, scores, strict=True):
        assert s.token_ids == c.token_ids
        # position i of the continuation is predicted at prompt position len(prompt) + i
        assert [ids[0] for ids in s.top_ids] == c.token_ids
        assert s.top_logprobs[0] == [-0.1, -2.5]
