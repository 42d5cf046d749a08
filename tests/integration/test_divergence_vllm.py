"""Divergence suite against a real vLLM server: the reference against itself is at the noise
floor. (The FP8 KV cache effect, measured on CPUs that run one: test_pipeline.py's report.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from qgate.profile import DivergenceSuite
from qgate.quality.client import SuiteClient
from qgate.quality.divergence import DivergenceSummary, summarize_divergence
from qgate.quality.divergence_suite import (
    ScoreSet,
    build_divergence_run,
    candidate_scores,
    reference_scores,
)

pytestmark = pytest.mark.integration

SPEC = DivergenceSuite(sequences=8, tokens=32, top_k=20)


async def _on(server: Any, use: Any) -> Any:
    async with SuiteClient(server.base_url, server.served_model) as client:
        return await use(client)


@pytest.fixture(scope="module")
def ref_scores(reference_server: Any) -> ScoreSet:
    out: ScoreSet = asyncio.run(_on(reference_server, lambda c: reference_scores(SPEC, c)))
    return out


def _against(ref: ScoreSet, server: Any) -> DivergenceSummary:
    cand = asyncio.run(_on(server, lambda c: candidate_scores(ref, c)))
    return summarize_divergence(build_divergence_run(ref, cand))


def test_reference_scores_shape(ref_scores: ScoreSet) -> None:
    assert len(ref_scores.sequences) == SPEC.sequences
    for seq in ref_scores.sequences:
        assert len(seq.token_ids) == SPEC.tokens
        assert len(seq.top_ids) == SPEC.tokens
        # every position reports at least top_k tokens and the scored token itself
        for ids, tok in zip(seq.top_ids, seq.token_ids, strict=True):
            assert len(ids) >= SPEC.top_k
            assert tok in ids


def test_reference_against_itself_is_at_the_noise_floor(
    ref_scores: ScoreSet, reference_server: Any
) -> None:
    s = _against(ref_scores, reference_server)
    assert s.positions == SPEC.sequences * SPEC.tokens
    assert s.mean_kld < 1e-3
    # bf16 near-ties flip with the batch: in CI on the Intel AMX kind (2026-12-06) the one
    # server scored against itself agreed on 251 of 256 top-1 tokens (mean KL 6e-4); a broken
    # precision sits far below (FP8 weights ~92%, INT4 g128 63-66%: the demo profile's header)
    assert s.top1_agreement >= 0.97
