"""`quality.sampling`: the sampling canaries (qgate/quality/sampling_data.py says what each
asks and when it counts as honoured)."""

from __future__ import annotations

from typing import Literal, Self, get_args

from pydantic import Field, model_validator

from qgate.profile.detect import AccuracyPolicy

__all__ = ["SamplingParam", "SamplingSuite"]

SamplingParam = Literal[
    "temperature",
    "seed",
    "top_k",
    "top_p",
    "max_tokens",
    "stop",
    "n",
    "logprobs",
    "repetition_penalty",
    "frequency_penalty",
    "presence_penalty",
]


def _every_param() -> list[SamplingParam]:
    return list(get_args(SamplingParam))


class SamplingSuite(AccuracyPolicy):
    """One canary per request parameter: does the candidate honour it as the reference does?
    Judged by `max_flips` (default 0: a canary the reference honoured and the candidate did not
    FAILs, naming the parameter); the exact test is off (11 canaries can never reject)."""

    params: list[SamplingParam] = Field(
        default_factory=_every_param,
        min_length=1,
        description="Parameters to check, one canary (item) each, asked one request at a time.",
    )
    max_tokens: int = Field(
        default=24,
        ge=24,
        le=256,
        description="Tokens per canary answer; at least 24, or a penalty has nothing to act on "
        "(at 12, SmolLM2's answer had not begun to repeat: the penalty canaries saw no change).",
    )
    samples: int = Field(
        default=4, ge=2, le=16, description="Sampled answers the temperature canary asks."
    )
    max_flips: int | None = Field(
        default=0, ge=0, description="Largest count of canaries the candidate may lose."
    )
    significance: bool = Field(default=False, description="The exact test (off: too few items).")

    @model_validator(mode="after")
    def _not_sized(self) -> Self:
        if self.detect is not None or self.show is not None:
            raise ValueError("the canaries are one per parameter: `detect` and `show` size nothing")
        return self
