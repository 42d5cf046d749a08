"""The sampled test's requests and the pure grading of what they got back (`quality.sampled`).

The canaries (sampling_data.py) show one parameter honoured on one prompt; this asks `prompts`
math questions of the shipped set (math_set.py, the short form) `samples` times each at
`temperature`, so that a change of the answer distribution shows in two numbers per question:
its score (the share of samples whose extracted number is right) and its diversity (the share
of pairs of its samples whose texts differ: 0 when every sample is the same text, as under a
greedy fall-back). Each request's seed is derived from the item and the sample (`sample_seed`), the
same on both sides, so `qgate verify` knows what was asked; a record stores every sample's
text, and verify grades them again with `grade_sampled`.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass

from qgate.core.files import sha256_bytes, sha256_json
from qgate.profile.sampled import SampledSuite
from qgate.quality.extract import answer_matches, extract_number
from qgate.quality.math_set import PROMPT_VERSION, MathItem, load_math_set, short_prompt

__all__ = [
    "SAMPLED_VERSION",
    "Graded",
    "diversity",
    "grade_sampled",
    "output_of",
    "sample_seed",
    "sampled_data_sha256",
    "sampled_items",
    "texts_of",
]

SAMPLED_VERSION = "1"


def sampled_items(setting: SampledSuite) -> list[MathItem]:
    """The questions asked: the first `prompts` of the math set (generated past the core set)."""
    return load_math_set(None, setting.prompts)[0]


def sample_seed(item_id: str, sample: int) -> int:
    """The seed of sample `sample` of `item_id`: fixed by the two, below 2**31 (vLLM's seed)."""
    digest = hashlib.sha256(f"qgate.sampled:{item_id}:{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def sampled_data_sha256(setting: SampledSuite) -> str:
    """Digest of what defines the requests (the reference cache keys on it)."""
    _, raw = load_math_set(None)
    return sha256_json(
        {
            "version": SAMPLED_VERSION,
            "prompt_version": PROMPT_VERSION,
            "set_sha256": sha256_bytes(raw),
            "prompts": setting.prompts,
            "samples": setting.samples,
            "temperature": setting.temperature,
            "max_tokens": setting.max_tokens,
            "prompt": short_prompt("{question}"),
        }
    )


def output_of(texts: list[str]) -> str:
    """What a question's record stores: its samples' texts, in sample order, as JSON."""
    return json.dumps(texts, ensure_ascii=False)


def texts_of(output: str) -> list[str]:
    """The texts a record stored (`output_of`); ValueError for anything else."""
    data = json.loads(output)
    if not isinstance(data, list) or not all(isinstance(t, str) for t in data):
        raise ValueError("not a list of texts")
    return data


def _normal(text: str) -> str:
    return " ".join(text.split())


def diversity(texts: list[str]) -> float:
    """The share of pairs of samples whose texts differ (whitespace collapsed): an unbiased
    estimate of the chance that two samples of the question differ (1 - sum of p_j^2, the
    Gini-Simpson index), whatever k is; 0 when every sample is the same text (greedy)."""
    k = len(texts)
    if k < 2:
        return 0.0
    counts = Counter(_normal(t) for t in texts).values()
    return 1 - sum(c * (c - 1) for c in counts) / (k * (k - 1))


@dataclass(frozen=True)
class Graded:
    """A question's grade: the share of samples right, its diversity, and the record's words."""

    score: float
    diversity: float
    answer: str
    correct: bool


def grade_sampled(output: str, expected: str, samples: int) -> Graded:
    """The grade of a stored record (a pure function of it): a record that does not hold
    `samples` texts scores 0 with no diversity."""
    try:
        texts = texts_of(output)
    except (ValueError, TypeError):
        return Graded(0.0, 0.0, "unreadable", False)
    if len(texts) != samples:
        return Graded(0.0, 0.0, f"{len(texts)} of {samples} samples", False)
    right = sum(answer_matches(extract_number(t), expected) for t in texts)
    distinct = len({_normal(t) for t in texts})
    said = f"{right}/{samples} correct, {distinct} distinct"
    return Graded(right / samples, diversity(texts), said, right == samples)
