"""`quality.sampled`: the paired test on sampled answers (qgate/quality/sampled_data.py says
what is asked, qgate/gates/sampled.py how it is judged, perf/bench_sampled.py its power)."""

from __future__ import annotations

from typing import ClassVar, Self

from pydantic import Field, model_validator

from qgate.core.bounds import clean_items_to_show
from qgate.profile.base import Fraction
from qgate.profile.detect import AccuracyPolicy

__all__ = ["SampledSuite"]


class SampledSuite(AccuracyPolicy):
    """Math questions sampled k times at T > 0 on both sides: accuracy and diversity paired.

    `prompts` exact-answer math questions, each asked `samples` times at `temperature` with
    seeds derived from the item and the sample (both sides ask the same requests). A prompt's
    score is its share of correct samples; its diversity the share of pairs of its samples whose
    texts differ. `max_drop` bounds the mean loss of sampled accuracy and
    `max_diversity_change` the mean change of diversity (either way), both by the paired bound
    for fractional scores: PASS only when the bounds are within them, FAIL when a bound shows
    them passed, INCONCLUSIVE otherwise."""

    fraction_items: ClassVar[bool] = True

    prompts: int = Field(
        default=128,
        ge=2,
        le=4096,
        description="Math questions asked (N); 2 x N x k requests in all. Stated power "
        "(perf/bench_sampled.py, simulated, defaults otherwise): at N=128, k=8 it FAILs a "
        "greedy fall-back 100% of the time, a halved temperature 99%, a 10-pt accuracy loss "
        "85%, and PASSes A/A 94% (INCONCLUSIVE otherwise, never FAIL); at N=64, k=8 (half the "
        "requests): 100%, 93%, 63%, and A/A only 70%.",
    )
    samples: int = Field(
        default=8,
        ge=2,
        le=64,
        description="Sampled answers per question (k): at least 2, or there is no diversity.",
    )
    temperature: float = Field(
        default=1.0,
        gt=0,
        le=2,
        description="Sampling temperature both sides are asked for (above 0: at 0 every sample "
        "is the greedy answer, and an ignored temperature cannot show).",
    )
    max_tokens: int = Field(default=32, ge=4, le=1024, description="Tokens per sampled answer.")
    max_drop: Fraction | None = Field(
        default=0.05,
        gt=0,
        lt=1,
        description="Largest allowed mean loss of sampled accuracy (reference minus candidate, "
        "per question the share of its samples correct).",
    )
    max_diversity_change: float = Field(
        default=0.15,
        gt=0,
        lt=1,
        description="Largest allowed mean change of diversity, either way: per question the "
        "share of pairs of its samples whose texts differ (an estimate of the chance that two "
        "samples differ, whatever `samples` is), so 0 is one answer repeated (greedy).",
    )
    significance: bool = Field(
        default=False, description="The exact McNemar test (off: the scores are fractions)."
    )

    @model_validator(mode="after")
    def _can_decide(self) -> Self:
        if self.detect is not None or self.show is not None:
            raise ValueError("`prompts` sizes the sampled test: `detect` and `show` size nothing")
        if self.rule != "bound":
            raise ValueError("the sampled test is judged by its bounds: `rule` must be 'bound'")
        if self.significance or self.max_flips is not None:
            raise ValueError(
                "a question's sampled score moves between asks by design: `significance` and "
                "`max_flips` judge exact answers; the sampled test uses `max_drop`"
            )
        if self.max_drop is None:
            raise ValueError("`max_drop` is what the sampled test shows: it must be set")
        tightest = min(self.max_drop, self.max_diversity_change)
        need = clean_items_to_show(tightest, 1 - self.alpha)
        if self.prompts < need:
            raise ValueError(
                f"prompts {self.prompts} can never PASS: with nothing changed the bound at "
                f"alpha {self.alpha:g} is within {100 * tightest:g} pts only from {need} prompts"
            )
        return self
