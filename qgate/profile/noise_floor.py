"""`quality.noise_floor`: the reference measured against itself before a flip counts (issue 44).

The reference asks its exact-answer items (math, recall) a second time in its own life at
another concurrency (another batch: greedy answers can change with it, vLLM #51187, #53257),
and scores its own divergence continuations again there. How often it disagrees with itself
is the floor; the gates read their limits against it (qgate/quality/noise_floor.py).
"""

from __future__ import annotations

from pydantic import Field

from qgate.profile.base import Strict

__all__ = ["FLOOR_SUITES", "NoiseFloor"]

FLOOR_SUITES = ("math", "recall")
"""The suites the reference asks again (item-level right/wrong answers, cheap to re-ask)."""


class NoiseFloor(Strict):
    """The reference's own noise floor, and the limits it derives where the profile sets none.

    Each exact-answer result's `max_flips` left unset becomes ceil(upper x n): `upper` the
    one-sided Clopper-Pearson bound, at `confidence`, of the share of floor items whose
    right/wrong changed between the reference's two asks (pooled over every result), `n` the
    result's items; the perf probes' `max_flips` left unset the same with the probe items.
    A limit the profile sets below what the floor allows is marked INSIDE NOISE FLOOR.
    """

    concurrency: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Requests in flight for the reference's second ask (default: a quarter of "
        "`quality.concurrency`, at least 1; it must differ from it: another batch).",
    )
    confidence: float = Field(
        default=0.95,
        gt=0.5,
        lt=1.0,
        description="Level of the upper bound on the reference's own disagreement rate.",
    )
    divergence: bool = Field(
        default=True,
        description="Also score the reference's divergence continuations again at that "
        "concurrency (its KL against itself: the floor a divergence limit is read against).",
    )

    def second_concurrency(self, first: int) -> int:
        """The concurrency of the second ask, given the quality stage's."""
        return self.concurrency if self.concurrency is not None else max(1, first // 4)
