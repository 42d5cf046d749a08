"""The math and recall suites against a real vLLM server (SmolLM2-135M on the CPU).

Small limits keep this quick; the point is that real answers flow into
well-formed records and that the easy items are answered sometimes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from qgate.profile import MathSuite, RecallSuite
from qgate.quality.extract import SYMBOL_PATTERN
from qgate.quality.math_suite import run_math
from qgate.quality.recall_suite import run_recall

pytestmark = pytest.mark.integration


def _accuracy(run: Any) -> float:
    return sum(i.correct for i in run.items) / len(run.items)


def test_math_short_and_long(reference_server: Any) -> None:
    spec = MathSuite(limit=16, prompts=["short", "long"], max_tokens=32)
    runs = asyncio.run(
        run_math(
            reference_server.base_url,
            reference_server.served_model,
            spec,
            "reference",
            concurrency=8,
            seed=0,
            max_model_len=4096,
            long_tokens=1536,
        )
    )
    short, long = runs
    assert (short.suite, long.suite) == ("math.short", "math.long")
    assert len(short.items) == len(long.items) == 16
    assert all(i.output for i in short.items)
    # SmolLM2-135M answers some single-digit sums; an all-wrong run means a broken pipeline.
    assert _accuracy(short) > 0
    assert sum(i.answer is not None for i in long.items) >= 8
    assert long.params["preamble_sizing"] == "tokenizer"
    assert 1500 < int(str(long.params["preamble_chars"])) < 1536 * 8
    assert all(i.output_tokens is not None and i.output_tokens <= 32 for i in short.items)


def test_recall_1024(reference_server: Any) -> None:
    import re

    spec = RecallSuite(context_tokens=[1024], depths=[0.1, 0.5, 0.9], haystacks=2)
    (run,) = asyncio.run(
        run_recall(
            reference_server.base_url,
            reference_server.served_model,
            spec,
            "reference",
            concurrency=6,
            seed=0,
            max_model_len=4096,
        )
    )
    assert run.suite == "recall.1024" and len(run.items) == 6
    assert run.params["sizing"] == "tokenizer"
    assert 950 <= int(str(run.params["haystack_tokens_min"])) <= 1024
    assert int(str(run.params["haystack_tokens_max"])) <= 1024
    for item in run.items:
        assert re.fullmatch(SYMBOL_PATTERN, item.expected)
        assert item.correct == (item.answer == item.expected)
    assert _accuracy(run) > 0
