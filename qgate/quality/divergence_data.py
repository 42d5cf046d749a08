"""The divergence suite's data: its corpus and the records its steps hand on.

`load_corpus` reads the JSONL corpus; `Continuation`, `SequenceScores` and
`ScoreSet` are what generation and scoring produce (the reference's `ScoreSet`
is cached and replayed). The HTTP steps live in qgate/quality/divergence_suite.py.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from qgate.core.files import sha256_bytes, sha256_text
from qgate.core.jsonl_checks import JsonlLineError, jsonl_values
from qgate.core.records import Record, Role
from qgate.errors import BadInput
from qgate.quality.data import evals_root
from qgate.quality.records import CrossSequence

__all__ = [
    "Continuation",
    "CorpusPrompt",
    "CrossSequence",
    "ScoreSet",
    "SequenceScores",
    "default_corpus",
    "load_corpus",
    "sha256_text",
]


class CorpusPrompt(Record):
    """One line of the divergence corpus."""

    id: str = Field(description="Stable prompt id.")
    prompt: str = Field(description="Raw text sent as a completion prompt.")


class Continuation(Record):
    """A corpus prompt and the reference's greedy continuation, as token ids."""

    id: str = Field(description="Corpus prompt id.")
    prompt_sha256: str = Field(description="sha256 of the prompt text.")
    prompt_ids: list[int] = Field(description="Prompt token ids from the reference's /tokenize.")
    token_ids: list[int] = Field(description="Greedy continuation token ids.")


class SequenceScores(Record):
    """One runtime's top-k logprobs at every continuation position of one sequence."""

    id: str = Field(description="Corpus prompt id.")
    prompt_sha256: str = Field(description="sha256 of the prompt text.")
    prompt_ids: list[int] = Field(description="Prompt token ids scored.")
    token_ids: list[int] = Field(description="Continuation token ids scored.")
    top_ids: list[list[int]] = Field(description="Per continuation position: token ids reported.")
    top_logprobs: list[list[float]] = Field(
        description="Per continuation position: logprobs of `top_ids`, same order."
    )


class ScoreSet(Record):
    """One runtime's scores of every continuation (cacheable for the reference)."""

    role: Role = Field(description="Which runtime scored.")
    data_sha256: str = Field(description="sha256 of the corpus file.")
    top_k: int = Field(description="prompt_logprobs requested.")
    tokens: int = Field(description="Continuation length requested.")
    sequences: list[SequenceScores] = Field(description="Per-sequence scores, in corpus order.")
    wall_s: float = Field(default=0.0, description="Wall time of generation plus scoring.")
    cross: list[CrossSequence] | None = Field(
        default=None,
        description="The candidate's own greedy generations with their logprobs (its second "
        "scoring path; None: not asked).",
    )


def default_corpus() -> Path:
    """The shipped corpus, evals/divergence/corpus.jsonl."""
    return evals_root() / "divergence" / "corpus.jsonl"


_NOT_A_LINE = "not a {id, prompt} line"


def load_corpus(path: Path | None, sequences: int) -> tuple[list[CorpusPrompt], str]:
    """The first `sequences` prompts of a JSONL corpus and the sha256 of the whole file.

    Lines need `id` and `prompt`; other keys (e.g. `kind`) are ignored.
    """
    path = default_corpus() if path is None else path
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"divergence corpus {path}: {exc.strerror or exc}") from exc
    prompts: list[CorpusPrompt] = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"divergence corpus {path}: not UTF-8 text ({exc.reason})") from None
    try:
        for lineno, obj in jsonl_values(text):
            try:
                prompts.append(CorpusPrompt(id=obj["id"], prompt=obj["prompt"]))
            except (ValueError, KeyError, TypeError) as exc:
                raise BadInput(f"divergence corpus {path}:{lineno}: {_NOT_A_LINE}") from exc
            if len(prompts) == sequences:
                break
    except JsonlLineError as exc:
        raise BadInput(f"divergence corpus {path}:{exc.lineno}: {_NOT_A_LINE}") from exc.cause
    if len(prompts) < sequences:
        raise BadInput(f"divergence corpus {path}: {len(prompts)} prompts, {sequences} asked")
    return prompts, sha256_bytes(raw)
