"""Sampling canaries: for each request parameter a user relies on, requests whose answers show
whether the server honoured it, and the pure grading of those answers.

Public failures answer HTTP 200 with the parameter silently dropped: a fall-back to greedy
in speculative verification (sgl-project/sglang PR #32922), an ignored `repetition_penalty`
(sgl-project/sglang #28179), an ignored temperature (vllm-project/vllm #15241). A canary is
one item: its requests are asked one at a time (a batch of one, so batch numerics cannot
move a seeded or greedy answer), and each answer is kept (`Answer`) in the item's output, so
`qgate verify` re-grades it. What "honoured" means, per parameter:

| parameter | requests | honoured when |
|---|---|---|
| temperature | `samples` at T=1, seeds 1.. | at least two answers differ |
| seed | two at T=1, the same seed | the two answers are the same |
| top_k | greedy; T=1 with top_k 1 | the answer is the greedy one |
| top_p | greedy; T=1 with top_p 1e-4 | the answer is the greedy one |
| max_tokens | greedy, max_tokens 4 | 4 tokens, finished by `length` |
| stop | greedy; greedy stopping at a word of it | that word and what follows are cut |
| n | n=3 at T=1 | three choices |
| logprobs | greedy, top_logprobs 3 | three logprobs at every position |
| repetition_penalty | greedy; greedy with 1.8 | the answers differ |
| frequency_penalty | greedy; greedy with 2 | the answers differ |
| presence_penalty | greedy; greedy with 2 | the answers differ |

The prompts ask for text that repeats (a penalty must change it) or that varies (sampling
must show). A canary the reference does not honour either is not judged: the paired gate
counts only those the reference honoured and the candidate did not.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, get_args

from qgate.core.files import sha256_json
from qgate.profile.sampling import SamplingParam

__all__ = [
    "EXPECTED",
    "PARAMS",
    "SAMPLING_VERSION",
    "Answer",
    "Canary",
    "Graded",
    "canary",
    "grade_canary",
    "answers_of",
    "output_of",
    "sampling_data_sha256",
    "stop_word",
]

SAMPLING_VERSION = "1"
EXPECTED = "honoured"
"""What every canary expects: its parameter honoured."""
PARAMS: tuple[str, ...] = get_args(SamplingParam)
"""Every parameter a canary checks, in the order they are asked."""

VARIED = "Write one sentence about a cat that lives in a lighthouse."
REPEATED = "Repeat after me: apple apple apple apple apple apple apple apple"
SHORT_CAP = 4
TOP_LOGPROBS = 3
CHOICES = 3


@dataclass(frozen=True)
class Answer:
    """What one canary request got back: the texts of its choices, how each ended, the
    completion tokens, and the count of top logprobs at each position of the first choice."""

    texts: list[str]
    finish: list[str | None]
    tokens: int | None = None
    top_counts: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Canary:
    """One parameter's requests (chat bodies without model/messages' system turn) and what a
    later request needs from an earlier answer (`stop`: a word of the greedy answer)."""

    param: str
    prompt: str
    bodies: list[dict[str, Any]]


def _greedy(max_tokens: int) -> dict[str, Any]:
    return {"temperature": 0.0, "max_tokens": max_tokens}


def canary(param: str, max_tokens: int, samples: int) -> Canary:
    """The requests of `param`'s canary (`stop`'s second request is completed by `stop_word`)."""
    sampled = {"temperature": 1.0, "max_tokens": max_tokens}
    if param == "temperature":
        return Canary(param, VARIED, [{**sampled, "seed": s + 1} for s in range(samples)])
    if param == "seed":
        return Canary(param, VARIED, [{**sampled, "seed": 7}, {**sampled, "seed": 7}])
    if param == "top_k":
        return Canary(param, VARIED, [_greedy(max_tokens), {**sampled, "seed": 3, "top_k": 1}])
    if param == "top_p":
        return Canary(param, VARIED, [_greedy(max_tokens), {**sampled, "seed": 3, "top_p": 1e-4}])
    if param == "max_tokens":
        return Canary(param, VARIED, [_greedy(SHORT_CAP)])
    if param == "stop":
        return Canary(param, VARIED, [_greedy(max_tokens), _greedy(max_tokens)])
    if param == "n":
        return Canary(param, VARIED, [{**sampled, "seed": 5, "n": CHOICES}])
    if param == "logprobs":
        ask = {**_greedy(max_tokens), "logprobs": True, "top_logprobs": TOP_LOGPROBS}
        return Canary(param, VARIED, [ask])
    strength = {"repetition_penalty": 1.8, "frequency_penalty": 2.0, "presence_penalty": 2.0}
    if param in strength:
        penalised = {**_greedy(max_tokens), param: strength[param]}
        return Canary(param, REPEATED, [_greedy(max_tokens), penalised])
    raise ValueError(f"no sampling canary for {param!r}")


def stop_word(greedy: str) -> str | None:
    """The stop string `stop`'s second request sends: the greedy answer's third word (so some
    text comes before it), None when the answer has fewer words."""
    words = greedy.split()
    return words[2] if len(words) > 2 else None


def sampling_data_sha256(params: Sequence[str], max_tokens: int, samples: int) -> str:
    """Digest of what defines the canaries' requests."""
    bodies = {p: asdict(canary(p, max_tokens, samples)) for p in params}
    return sha256_json({"version": SAMPLING_VERSION, "canaries": bodies})


def output_of(answers: list[Answer]) -> str:
    """What a canary's record stores: every answer, as canonical JSON."""
    return json.dumps([asdict(a) for a in answers], sort_keys=True, ensure_ascii=False)


def answers_of(output: str) -> list[Answer]:
    """The answers a record stored (`output_of`); ValueError for anything else."""
    data = json.loads(output)
    if not isinstance(data, list):
        raise ValueError("not a list of answers")
    return [Answer(**a) for a in data]


@dataclass(frozen=True)
class Graded:
    """A canary's grade: what was seen (`answer`), and whether the parameter was honoured."""

    answer: str
    honoured: bool


def grade_canary(param: str, output: str) -> Graded:
    """Whether the stored answers show `param` honoured (a pure function of the record)."""
    try:
        answers = answers_of(output)
    except (ValueError, TypeError):
        return Graded("unreadable", False)
    if not answers or any(not a.texts for a in answers):
        return Graded("no answer", False)
    first = [a.texts[0] for a in answers]
    if param == "temperature":
        distinct = len(set(first))
        return Graded(f"{distinct} distinct of {len(first)}", distinct > 1)
    if param == "seed":
        return Graded("same" if first[0] == first[1] else "differ", first[0] == first[1])
    if param in ("top_k", "top_p"):
        same = first[1] == first[0]
        return Graded("greedy" if same else "not greedy", same)
    if param == "max_tokens":
        a = answers[0]
        ok = a.tokens == SHORT_CAP and a.finish[0] == "length"
        return Graded(f"{a.tokens} tokens, {a.finish[0]}", ok)
    if param == "stop":
        word = stop_word(first[0])
        if word is None or len(first) < 2:
            return Graded("no stop word", False)
        cut = first[0][: first[0].index(word)]
        ok = word not in first[1] and first[1].strip() == cut.strip()
        return Graded(f"stopped before {word!r}" if ok else f"ran past {word!r}", ok)
    if param == "n":
        return Graded(f"{len(answers[0].texts)} choices", len(answers[0].texts) == CHOICES)
    if param == "logprobs":
        counts = answers[0].top_counts
        ok = bool(counts) and all(c == TOP_LOGPROBS for c in counts)
        return Graded(f"top logprobs {sorted(set(counts))}", ok)
    differ = first[1] != first[0]
    return Graded("changed" if differ else "unchanged", differ)
