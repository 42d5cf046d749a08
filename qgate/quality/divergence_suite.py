"""The logit divergence suite: reference continuations, teacher-forced scoring, the run record.

Three separately callable steps, because the pipeline runs them at different
times and the reference's results are cached:

1. `generate_continuations` on the reference: tokenize each corpus prompt
   (POST /tokenize) and take the greedy continuation of exactly `tokens`
   tokens (`ignore_eos`, token ids from `return_tokens_as_token_ids`).
2. `score` on each runtime: send prompt ids + continuation ids as a token-id
   prompt with `prompt_logprobs: top_k` and `max_tokens: 1`, and keep the
   top-k logprobs of every continuation position (teacher forcing: both
   runtimes see identical token ids).
3. `build_divergence_run` compares the two `ScoreSet`s with the pure math of
   `qgate.quality.divergence`.

The corpus and the records of these steps live in
qgate/quality/divergence_data.py (re-exported here).

Prompts are raw completions of the corpus text, not chat-templated: the goal
is to compare next-token distributions on identical tokens, and a template
adds nothing but tokens. Intermediate results are pydantic models so the
reference's scores can be cached and replayed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from qgate.core import progress
from qgate.core.records import Role
from qgate.errors import BadInput, InfrastructureError
from qgate.profile import DivergenceSuite
from qgate.quality.client import SuiteClient
from qgate.quality.divergence import position_divergence
from qgate.quality.divergence_data import (
    Continuation,
    CorpusPrompt,
    CrossSequence,
    ScoreSet,
    SequenceScores,
    default_corpus,
    load_corpus,
    sha256_text,
)
from qgate.quality.records import DivergenceRun, DivergenceSequence

__all__ = [
    "SUITE",
    "Continuation",
    "CorpusPrompt",
    "ScoreSet",
    "SequenceScores",
    "build_divergence_run",
    "candidate_scores",
    "continuations_of",
    "cross_scores",
    "default_corpus",
    "generate_continuations",
    "load_corpus",
    "reference_scores",
    "run_scores",
    "score",
    "sha256_text",
]

if TYPE_CHECKING:
    from qgate.quality.client import SuiteClient
    from qgate.quality.runner import SuiteContext


def _token_id(token: str) -> int:
    # return_tokens_as_token_ids renders every token as "token_id:<id>".
    prefix, _, value = token.partition(":")
    if prefix != "token_id" or not value.lstrip("-").isdigit():
        raise InfrastructureError(
            f"unexpected token {token!r}: return_tokens_as_token_ids was ignored"
        )
    return int(value)


async def generate_continuations(
    client: SuiteClient, prompts: Sequence[CorpusPrompt], tokens: int, *, seed: int = 0
) -> list[Continuation]:
    """Greedy continuations of exactly `tokens` tokens for every prompt, on the reference."""
    counter = progress.items("divergence", len(prompts), "continuations")

    async def one(p: CorpusPrompt) -> Continuation:
        try:
            prompt_ids = await client.tokenize(p.prompt, add_special_tokens=None)
        except InfrastructureError as exc:
            raise InfrastructureError(f"tokenize {p.id}: {exc.message}", exc.details) from exc
        body = {
            "model": client.model,
            "prompt": prompt_ids,
            "max_tokens": tokens,
            "min_tokens": tokens,
            "ignore_eos": True,
            "temperature": 0.0,
            "seed": seed,
            "logprobs": 1,
            "return_tokens_as_token_ids": True,
        }
        out = await client.completions(body, f"continuation {p.id}")
        ids = [_token_id(t) for t in out["choices"][0]["logprobs"]["tokens"]]
        if len(ids) != tokens:
            raise InfrastructureError(f"continuation {p.id}: {len(ids)} tokens, {tokens} asked")
        counter.advance()
        return Continuation(
            id=p.id, prompt_sha256=sha256_text(p.prompt), prompt_ids=prompt_ids, token_ids=ids
        )

    return list(await asyncio.gather(*(one(p) for p in prompts)))


def _parse_scores(c: Continuation, choice: dict[str, Any]) -> SequenceScores:
    plp = choice.get("prompt_logprobs")
    start = len(c.prompt_ids)
    if not isinstance(plp, list) or len(plp) != start + len(c.token_ids):
        raise InfrastructureError(f"score {c.id}: server returned no usable prompt_logprobs")
    top_ids: list[list[int]] = []
    top_lps: list[list[float]] = []
    for pos in plp[start:]:
        entries = sorted((int(t), float(v["logprob"])) for t, v in pos.items())
        top_ids.append([t for t, _ in entries])
        top_lps.append([v for _, v in entries])
    return SequenceScores(
        id=c.id,
        prompt_sha256=c.prompt_sha256,
        prompt_ids=c.prompt_ids,
        token_ids=c.token_ids,
        top_ids=top_ids,
        top_logprobs=top_lps,
    )


async def score(
    client: SuiteClient, token_sequences: Sequence[Continuation], top_k: int, *, batch: int = 1
) -> list[SequenceScores]:
    """Top-k logprobs of every continuation position, teacher-forced, on one runtime.

    `batch` > 1 sends that many sequences per request (a list of token-id
    prompts, which vLLM's completions API accepts); it saves per-request
    server overhead on small machines. The default, one sequence a request,
    works with any OpenAI-compatible server that supports prompt_logprobs.
    """
    seqs = list(token_sequences)
    chunks = [seqs[i : i + max(1, batch)] for i in range(0, len(seqs), max(1, batch))]
    counter = progress.items("divergence", len(seqs), "sequences scored")

    async def one(chunk: list[Continuation]) -> list[SequenceScores]:
        prompts = [c.prompt_ids + c.token_ids for c in chunk]
        body = {
            "model": client.model,
            "prompt": prompts[0] if len(chunk) == 1 else prompts,
            "max_tokens": 1,
            "temperature": 0.0,
            "prompt_logprobs": top_k,
        }
        what = f"score {chunk[0].id}" + (f" (+{len(chunk) - 1})" if len(chunk) > 1 else "")
        out = await client.completions(body, what)
        choices = sorted(out["choices"], key=lambda ch: int(ch.get("index", 0)))
        if len(choices) != len(chunk):
            raise InfrastructureError(f"{what}: {len(choices)} choices for {len(chunk)} prompts")
        counter.advance(len(chunk))
        return [_parse_scores(c, ch) for c, ch in zip(chunk, choices, strict=True)]

    parts = await asyncio.gather(*(one(ch) for ch in chunks))
    return [s for part in parts for s in part]


def _top(position: dict[str, float] | None, where: str) -> tuple[list[int], list[float]]:
    """One generated position's top logprobs ({"token_id:N": logprob}), ids ascending."""
    if not isinstance(position, dict) or not position:
        raise InfrastructureError(f"{where}: the server returned no top logprobs")
    entries = sorted((_token_id(t), float(v)) for t, v in position.items())
    return [t for t, _ in entries], [v for _, v in entries]


async def cross_scores(
    client: SuiteClient, token_sequences: Sequence[Continuation], top_k: int
) -> list[CrossSequence]:
    """The second scoring path (issue 55 item 4): each prompt generated greedily to the
    continuation's length on this runtime, with the top-k logprobs of every generated
    position. Where it generates the reference's tokens, the context of each position is the
    one the teacher-forced scores saw, so the two paths must agree; a speculating engine
    drafts and verifies on this path, and scores the prefill path without drafting."""
    counter = progress.items("divergence", len(token_sequences), "cross-check generations")

    async def one(c: Continuation) -> CrossSequence:
        body = {
            "model": client.model,
            "prompt": c.prompt_ids,
            "max_tokens": len(c.token_ids),
            "min_tokens": len(c.token_ids),
            "ignore_eos": True,
            "temperature": 0.0,
            "logprobs": top_k,
            "return_tokens_as_token_ids": True,
        }
        what = f"cross-check {c.id}"
        out = await client.completions(body, what)
        logprobs = out["choices"][0].get("logprobs") or {}
        tokens, tops = logprobs.get("tokens"), logprobs.get("top_logprobs")
        if not isinstance(tokens, list) or not isinstance(tops, list) or len(tops) != len(tokens):
            raise InfrastructureError(f"{what}: the server returned no usable logprobs")
        ids = [_token_id(t) for t in tokens]
        pairs = [_top(p, f"{what} position {i}") for i, p in enumerate(tops)]
        counter.advance()
        return CrossSequence(
            id=c.id,
            token_ids=ids,
            top_ids=[i for i, _ in pairs],
            top_logprobs=[v for _, v in pairs],
        )

    return list(await asyncio.gather(*(one(c) for c in token_sequences)))


async def run_scores(
    role: Role,
    client: SuiteClient,
    continuations: Sequence[Continuation],
    *,
    data_sha256: str,
    top_k: int,
    tokens: int,
    started: float | None = None,
) -> ScoreSet:
    """Score continuations on one runtime and wrap them as a ScoreSet with its wall time."""
    t0 = time.monotonic() if started is None else started
    seqs = await score(client, continuations, top_k)
    return ScoreSet(
        role=role,
        data_sha256=data_sha256,
        top_k=top_k,
        tokens=tokens,
        sequences=seqs,
        wall_s=time.monotonic() - t0,
    )


async def reference_scores(
    spec: DivergenceSuite, client: SuiteClient, *, seed: int = 0
) -> ScoreSet:
    """Steps 1 and 2 on the reference: continuations of the corpus, then their scores."""
    started = time.monotonic()
    prompts, data_sha256 = load_corpus(spec.corpus, spec.sequences)
    conts = await generate_continuations(client, prompts, spec.tokens, seed=seed)
    return await run_scores(
        "reference",
        client,
        conts,
        data_sha256=data_sha256,
        top_k=spec.top_k,
        tokens=spec.tokens,
        started=started,
    )


async def candidate_scores(
    reference: ScoreSet, client: SuiteClient, *, cross_check: bool = False
) -> ScoreSet:
    """Step 2 on the candidate: score the (possibly cached) reference's token sequences;
    `cross_check`: also the second scoring path (`cross_scores`)."""
    started = time.monotonic()
    conts = continuations_of(reference)
    scores = await run_scores(
        "candidate",
        client,
        conts,
        data_sha256=reference.data_sha256,
        top_k=reference.top_k,
        tokens=reference.tokens,
        started=started,
    )
    if not cross_check:
        return scores
    cross = await cross_scores(client, conts, reference.top_k)
    return scores.model_copy(update={"cross": cross, "wall_s": time.monotonic() - started})


def continuations_of(scores: ScoreSet) -> list[Continuation]:
    """The token sequences a (cached) reference ScoreSet scored, to score the candidate on."""
    return [
        Continuation(
            id=s.id, prompt_sha256=s.prompt_sha256, prompt_ids=s.prompt_ids, token_ids=s.token_ids
        )
        for s in scores.sequences
    ]


def build_divergence_run(reference: ScoreSet, candidate: ScoreSet) -> DivergenceRun:
    """Per-position KL, top-1 agreement and delta-p of the candidate against the reference.

    Raises BadInput when the two score sets did not score identical tokens.
    """
    cand = {s.id: s for s in candidate.sequences}
    out: list[DivergenceSequence] = []
    for r in reference.sequences:
        c = cand.get(r.id)
        if candidate.top_k != reference.top_k:
            raise BadInput("divergence: reference and candidate scored different top_k")
        if c is None or c.prompt_ids != r.prompt_ids or c.token_ids != r.token_ids:
            raise BadInput(f"divergence: candidate did not score the reference's tokens for {r.id}")
        kld: list[float] = []
        agree: list[bool] = []
        dp: list[float] = []
        for i, tok in enumerate(r.token_ids):
            pos = position_divergence(
                dict(zip(r.top_ids[i], r.top_logprobs[i], strict=True)),
                dict(zip(c.top_ids[i], c.top_logprobs[i], strict=True)),
                tok,
                reference.top_k,
            )
            kld.append(pos.kld)
            agree.append(pos.top1_agree)
            dp.append(pos.delta_p)
        out.append(
            DivergenceSequence(
                id=r.id,
                prompt_sha256=r.prompt_sha256,
                token_ids=r.token_ids,
                kld=kld,
                top1_agree=agree,
                delta_p=dp,
                reference_top_ids=r.top_ids,
                reference_top_logprobs=r.top_logprobs,
                candidate_top_ids=c.top_ids,
                candidate_top_logprobs=c.top_logprobs,
            )
        )
    return DivergenceRun(
        data_sha256=reference.data_sha256,
        top_k=reference.top_k,
        tokens=reference.tokens,
        sequences=out,
        wall_s=reference.wall_s + candidate.wall_s,
        cross_check=candidate.cross,
    )


class DivergenceRunner:
    """The paired divergence step in the quality stage (entry: qgate/profile/suites.py)."""

    def data_digests(self, setting: DivergenceSuite, max_model_len: int | None) -> dict[str, str]:
        return {"divergence": load_corpus(setting.corpus, setting.sequences)[1]}

    async def reference(self, setting: DivergenceSuite, ctx: SuiteContext) -> ScoreSet:
        async with ctx.client() as client:
            return await reference_scores(setting, client, seed=ctx.seed)

    async def candidate(self, reference: ScoreSet, ctx: SuiteContext) -> ScoreSet:
        async with ctx.client() as client:
            return await candidate_scores(reference, client, cross_check=ctx.cross_check)


SUITE = DivergenceRunner()
