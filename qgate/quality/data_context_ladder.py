"""The context ladder's planted codes, derived without a tokenizer (run and verify share it).

An item's code depends on the ladder's seed, its bucket's centre, its index and its depth
only (the recall generator's needle stream), never on the haystack's measured length, so
`qgate verify` re-derives every expected code from the profile alone.
"""

from __future__ import annotations

from qgate.profile import ContextLadder
from qgate.quality import data_recall

__all__ = ["depth_of", "ladder_codes"]


def depth_of(spec: ContextLadder, index: int) -> float:
    """Where item `index` of a bucket plants its code: the depths in turn."""
    return spec.depths[index % len(spec.depths)]


def ladder_codes(spec: ContextLadder, centre: int, count: int) -> dict[int, tuple[float, str]]:
    """Item index -> (depth, planted code) of bucket `centre`."""
    out: dict[int, tuple[float, str]] = {}
    for i in range(count):
        depth = depth_of(spec, i)
        rng = data_recall.haystack_rng(spec.seed, centre, i, depth)
        out[i] = (depth, data_recall.make_needles(rng, [depth])[0].symbol)
    return out
