"""The order a suite asks its items in under sequential looks (`quality.stop: looks`).

The ids sorted, then shuffled by the profile's seed: the first items asked are a random
draw of the suite, so each look judges a sample of it rather than the set file's head, and
`qgate verify` re-derives the order from the ids alone, however they were recorded.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import TypeVar

__all__ = ["look_order", "in_look_order"]

T = TypeVar("T")


def look_order(ids: Iterable[str], seed: int) -> list[str]:
    """The ids in the order they are asked."""
    order = sorted(ids)
    random.Random(f"qgate-looks-{seed}").shuffle(order)
    return order


def in_look_order(items: Sequence[T], ids: Sequence[str], seed: int | None) -> list[T]:
    """`items` (whose ids are `ids`) in look order; as they are when `seed` is None."""
    if seed is None:
        return list(items)
    at = {item_id: k for k, item_id in enumerate(ids)}
    return [items[at[i]] for i in look_order(ids, seed)]
