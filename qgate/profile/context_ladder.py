"""The context-length ladder's buckets: pure arithmetic, shared by plan, run, verify and report.

Bucket P (a power of two) spans [round(P/sqrt(2)), round(P*sqrt(2))) tokens, so the edges sit
at the half powers (724, 1448, 2896, 5793, 11585, ...) and every power-of-two boundary
(2,048/2,049, 4,096/4,097) falls strictly inside one bucket, never on an edge: the cliffs the
field reports at a power of two (vLLM #39303: 100% at 2,048, ~0.5% at 2,049) land in the
middle of a bucket whose items sit on both sides of it. The top bucket ends at the ladder's
`up_to` (the model's limit). Item lengths are spread geometrically across a bucket, so an
even count has as many items below its power of two as above it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = [
    "ROOM_MARGIN_TOKENS",
    "Bucket",
    "bucket_of_suite",
    "buckets",
    "first_cliff",
    "item_id",
    "parse_item_id",
    "targets",
    "unreachable",
]

ROOM_MARGIN_TOKENS = 128
"""Room for the question and the chat template around a haystack (the recall suite's
MARGIN_TOKENS: a unit test holds the two equal)."""

_ID = re.compile(r"^context\.(\d+)\.i(\d+)\.t(\d+)\.d(\d+)$")


@dataclass(frozen=True)
class Bucket:
    """One length bucket: haystacks of lo <= tokens < hi, centred on the power of two."""

    centre: int
    lo: int
    hi: int
    """Exclusive; the top bucket's hi is up_to + 1."""

    @property
    def suite(self) -> str:
        """Its result id, `context.<centre>`."""
        return f"context.{self.centre}"

    def label(self) -> str:
        """'[1448, 2895]' (both ends inclusive), for people."""
        return f"[{self.lo}, {self.hi - 1}]"


def buckets(start: int, up_to: int) -> list[Bucket]:
    """Buckets centred on start, 2*start, ... whose lower edge lies at or below `up_to`."""
    if start < 1 or start & (start - 1):
        raise ValueError(f"start {start} is not a power of two")
    out: list[Bucket] = []
    centre = start
    while True:
        lo = round(centre / math.sqrt(2))
        if lo > up_to:
            break
        hi = min(round(centre * math.sqrt(2)), up_to + 1)
        out.append(Bucket(centre, lo, hi))
        if hi > up_to:
            break
        centre *= 2
    return out


def targets(bucket: Bucket, count: int, top: int | None = None) -> list[int]:
    """`count` haystack lengths spread geometrically over the bucket (capped at `top`)."""
    hi = bucket.hi - 1 if top is None else min(bucket.hi - 1, top)
    lo = bucket.lo
    if hi < lo:
        return [hi] * count
    return [round(lo * (hi / lo) ** ((i + 0.5) / count)) for i in range(count)]


def item_id(centre: int, index: int, target: int, depth: float) -> str:
    """`context.<centre>.i<index>.t<target tokens>.d<depth %>`."""
    return f"context.{centre}.i{index}.t{target}.d{round(depth * 100):02d}"


def parse_item_id(text: str) -> tuple[int, int, int, int] | None:
    """(centre, index, target, depth %) of an item id, or None when it is not one."""
    m = _ID.match(text)
    return None if m is None else (int(m[1]), int(m[2]), int(m[3]), int(m[4]))


def bucket_of_suite(suite: str) -> int | None:
    """The centre of a `context.<centre>` result id, or None."""
    head, _, rest = suite.partition(".")
    return int(rest) if head == "context" and rest.isdigit() else None


def unreachable(start: int, up_to: int, max_model_len: int, max_tokens: int) -> list[int]:
    """Centres of the buckets whose every length lies beyond what `max_model_len` holds."""
    room = max_model_len - max_tokens - ROOM_MARGIN_TOKENS
    return [b.centre for b in buckets(start, up_to) if b.lo > room]


def first_cliff(failed: dict[int, bool]) -> int | None:
    """The smallest bucket centre whose gates failed (the cliff), or None when none did."""
    bad = sorted(c for c, f in failed.items() if f)
    return bad[0] if bad else None
