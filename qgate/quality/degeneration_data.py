"""Long generations: the prompts the degeneration probe asks, and the pure grading of an answer.

A serving change can corrupt answers only once they are long, or only in a batch mixed with
prefill-only requests: DP attention corrupted 6 of 11 long answers and none of 19 short ones
(sgl-project/sglang #33397); a prefill-only batch caused repetition until the token limit
(vllm-project/vllm #55357); a chunked-prefill size raised a "!" loop from 1/12 to 6/12.
Every other suite's answers are a few dozen tokens, so the probe asks for long text and
grades each answer for the ways a long generation goes wrong:

- `loop`: the second half of the text compresses below `LOOP_RATIO` (zlib; prose
  compresses to about 0.35-0.5, a loop of a few tokens below 0.1);
- `empty`: no text at all;
- `http_error`: the server answered with an error status.

Anything else is clean. The answer string records the length, the finish reason and the
compression ratio, so the report can show the distribution; grading is a pure function of
the stored output and finish reason (`qgate verify` re-derives it).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from qgate.core.files import sha256_json

__all__ = [
    "DEGENERATION_VERSION",
    "EXPECTED",
    "HTTP_ERROR",
    "LOOP_RATIO",
    "LongGrade",
    "LongItem",
    "compression_ratio",
    "degeneration_data_sha256",
    "grade_long",
    "long_items",
]

DEGENERATION_VERSION = "1"
EXPECTED = "clean"
"""What every long item expects: a clean answer."""
HTTP_ERROR = "http_error"
LOOP_RATIO = 0.2
MIN_JUDGED_CHARS = 200
"""A second half shorter than this is not judged a loop (too short to compress either way)."""

TOPICS = [
    "a lighthouse keeper who finds a map in a bottle",
    "the history of the bicycle, from its invention to today",
    "how bread is made, from the wheat field to the bakery",
    "a journey by train across a large country in winter",
    "the life of a honey bee in one summer",
    "a small town that builds its first library",
    "how a river changes from its source to the sea",
    "a young chess player preparing for a tournament",
    "the building of a wooden boat by hand",
    "a day in the life of a city bus driver",
    "how the seasons change a forest through the year",
    "a scientist who studies volcanoes on a remote island",
    "the first day of school in a mountain village",
    "a family that moves to a farm and learns to grow food",
    "the story of a lost dog finding its way home",
    "how a newspaper is written, printed and delivered",
]


@dataclass(frozen=True)
class LongItem:
    """One long-generation prompt."""

    id: str
    prompt: str


def long_items(count: int) -> list[LongItem]:
    """`count` prompts, each asking for a long text on its own topic (topics repeat past 16,
    worded differently)."""
    out = []
    for n in range(count):
        topic = TOPICS[n % len(TOPICS)]
        form = "story" if (n // len(TOPICS)) % 2 == 0 else "essay"
        out.append(
            LongItem(
                f"long-{n}", f"Write a long, detailed {form} about {topic}. Use many paragraphs."
            )
        )
    return out


def degeneration_data_sha256(count: int, max_tokens: int, burst: bool) -> str:
    """Digest of what defines the probe's requests."""
    prompts = [(i.id, i.prompt) for i in long_items(count)]
    return sha256_json(
        {
            "version": DEGENERATION_VERSION,
            "items": prompts,
            "max_tokens": max_tokens,
            "burst": burst,
        }
    )


def compression_ratio(text: str) -> float:
    """zlib-compressed bytes over raw bytes of `text` (1.0 for empty text)."""
    raw = text.encode("utf-8")
    return len(zlib.compress(raw, 9)) / len(raw) if raw else 1.0


@dataclass(frozen=True)
class LongGrade:
    """An answer's grade: what was seen (`answer`), whether it is clean, and if not, why."""

    answer: str
    clean: bool
    failure: str | None


def grade_long(output: str, finish_reason: str | None) -> LongGrade:
    """`loop`, `empty` or `http_error`, else clean; the answer states length, finish, ratio."""
    if finish_reason == HTTP_ERROR:
        return LongGrade("http error", False, "http_error")
    if not output.strip():
        return LongGrade(f"0 chars, {finish_reason}", False, "empty")
    tail = output[len(output) // 2 :]
    ratio = compression_ratio(tail)
    said = f"{len(output)} chars, {finish_reason}, tail ratio {ratio:.2f}"
    if len(tail.encode("utf-8")) >= MIN_JUDGED_CHARS and ratio < LOOP_RATIO:
        return LongGrade(said, False, "loop")
    return LongGrade(said, True, None)
