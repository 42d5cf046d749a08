"""The quality block of a profile: the suites and their gate policies."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, ModelWrapValidatorHandler, field_validator, model_validator

from qgate.profile.agent import STRUCTURED_PARAMS, TOOL_CHOICES, StructuredSuite, ToolCallsSuite
from qgate.profile.base import Fraction, KeyIssue, Strict
from qgate.profile.degeneration import DegenerationSuite
from qgate.profile.detect import AccuracyPolicy, Detect, detect_problem, fewest_rejecting
from qgate.profile.divergence import DivergenceSuite
from qgate.profile.extra_suites import split_settings
from qgate.profile.ladder_spec import ContextLadder
from qgate.profile.noise_floor import NoiseFloor
from qgate.profile.reuse import ReuseSpec
from qgate.profile.sampled import SampledSuite
from qgate.profile.sampling import SamplingSuite
from qgate.profile.speculative import SpeculativeSpec

__all__ = [
    "ANSWER_MAX_TOKENS",
    "NON_SUITE_SETTINGS",
    "LADDER_LEVELS",
    "LM_EVAL_METRIC",
    "LM_EVAL_TASK",
    "AccuracyPolicy",
    "Calibration",
    "Detect",
    "DivergenceSuite",
    "ContextLadder",
    "LmEvalTask",
    "MathSuite",
    "QualitySpec",
    "RecallSuite",
    "STRUCTURED_PARAMS",
    "DegenerationSuite",
    "SampledSuite",
    "SamplingSuite",
    "StructuredSuite",
    "TOOL_CHOICES",
    "ToolCallsSuite",
    "detect_problem",
    "fewest_rejecting",
]


def _both_prompt_forms() -> list[Literal["short", "long"]]:
    return ["short", "long"]


ANSWER_MAX_TOKENS = 48
"""Generation budget of one exact-answer reply (math items, perf probes)."""


LADDER_LEVELS = 10
"""Levels of the generated math ladder (qgate/quality/data_ladder.py): 1 easiest, 10 hardest."""


class Calibration(Strict):
    """Draw only from the ladder levels where the reference can flip: neither floor nor ceiling."""

    records: Path = Field(
        description="Calibration records (JSON, written by `qgate calibrate` from a prior "
        "verified report of this model; a run of another checkpoint refuses them): per item, "
        "whether the reference (and the candidate, when that run had one) "
        "answered it; their accuracy per level picks the levels, their flips the discordance."
    )
    band: list[Fraction] = Field(
        default_factory=lambda: [0.2, 0.85],
        min_length=2,
        max_length=2,
        description="Reference accuracy [low, high] a level must lie in to be drawn from.",
    )
    min_items: int = Field(
        default=8, ge=1, description="Records a level needs before its accuracy is trusted."
    )

    @field_validator("band")
    @classmethod
    def _ordered(cls, value: list[float]) -> list[float]:
        if value[0] >= value[1]:
            raise ValueError("band must be [low, high] with low < high")
        return value


class MathSuite(AccuracyPolicy):
    """Exact-answer arithmetic and word problems, short and long prompt forms."""

    set: Path | None = Field(
        default=None, description="JSONL set; the shipped core set if omitted."
    )
    levels: list[Annotated[int, Field(ge=1, le=LADDER_LEVELS)]] | None = Field(
        default=None,
        min_length=1,
        description="Draw from these levels of the difficulty ladder (1-10) instead of the core "
        "set, interleaved; with `calibration`, the levels it may pick from (default all).",
    )
    calibration: Calibration | None = Field(
        default=None,
        description="Pick the ladder levels from a prior run's records: those where the "
        "reference's accuracy lies in the band; sizing then uses their observed discordance.",
    )
    prompts: list[Literal["short", "long"]] = Field(
        default_factory=_both_prompt_forms, min_length=1, description="Prompt forms."
    )
    limit: int | None = Field(default=None, ge=1, description="Use only the first N items.")
    max_tokens: int = Field(
        default=ANSWER_MAX_TOKENS, ge=1, description="Generation budget per answer."
    )
    long_tokens: int = Field(
        default=3072,
        ge=256,
        description="Preamble length in tokens for the long form; clipped to fit max_model_len.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.set is not None and (self.levels is not None or self.calibration is not None):
            raise KeyIssue(
                [(("set",), "a JSONL set has no ladder levels; drop levels/calibration")]
            )
        if self.levels is not None and len(set(self.levels)) != len(self.levels):
            raise KeyIssue([(("levels",), "each level at most once")])
        return self


class RecallSuite(AccuracyPolicy):
    """Symbols planted at several depths of a haystack; recall by exact match."""

    context_tokens: list[Annotated[int, Field(ge=64)]] = Field(
        default_factory=lambda: [1024], min_length=1, description="Haystack lengths in tokens."
    )
    depths: list[Fraction] = Field(
        default_factory=lambda: [0.1, 0.3, 0.5, 0.7, 0.9],
        min_length=1,
        description="Where symbols are planted, as a fraction of the haystack.",
    )
    haystacks: int = Field(default=4, ge=1, description="Haystacks per length.")
    similar: list[Annotated[int, Field(ge=0, le=64)]] = Field(
        default_factory=lambda: [0],
        min_length=1,
        description="Difficulty levels: how many similar distractor codes (nearby locker "
        "numbers, codes one character apart) each haystack also holds; every level gets "
        "every haystack and depth. [0]: none, the classic needle.",
    )
    seed: int = Field(default=1234, description="Seed of the generated haystacks.")
    max_tokens: int = Field(
        default=32,
        ge=1,
        description="Generation budget per answer; models restate the question "
        "('The access code for locker 497 is XW-1830.', about 18 tokens).",
    )


LM_EVAL_TASK = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
"""An lm-eval task or group name as its registry spells them ('gsm8k', 'mmlu_pro', 'arc-c')."""
LM_EVAL_METRIC = re.compile(r"[A-Za-z0-9_@.\-]{1,64}(,[A-Za-z0-9_@.\-]{1,64})?")
"""A metric, optionally a comma and its filter: 'exact_match,flexible-extract', 'pass@1'."""


class LmEvalTask(AccuracyPolicy):
    """Any lm-eval task, run against the server through lm-eval's OpenAI-compatible backend."""

    task: str = Field(
        description="lm-eval task name (letters, digits, '_', '.', '-'; at most 128)."
    )
    metric: str = Field(
        default="exact_match",
        description="Metric and filter, e.g. 'exact_match,flexible-extract' (letters, digits, "
        "'_', '@', '.', '-', one comma before the filter).",
    )
    include_path: Path | None = Field(default=None, description="Folder of task YAMLs.")
    limit: int | None = Field(default=None, ge=1, description="Use only the first N documents.")
    num_fewshot: int | None = Field(default=None, ge=0, description="Few-shot examples.")
    chat: bool = Field(default=False, description="Use the chat completions backend.")

    @field_validator("task")
    @classmethod
    def _task_name(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name an lm-eval task")
        if not LM_EVAL_TASK.fullmatch(value):
            raise ValueError(
                "not an lm-eval task name: letters, digits, '_', '.' or '-', at most 128, "
                "e.g. 'gsm8k' (checked now, not after the servers ran)"
            )
        return value

    @field_validator("metric")
    @classmethod
    def _metric_name(cls, value: str) -> str:
        if not LM_EVAL_METRIC.fullmatch(value):
            raise ValueError(
                "must be a metric, or a metric and a filter, e.g. "
                "'exact_match,flexible-extract' (letters, digits, '_', '@', '.', '-')"
            )
        return value


NON_SUITE_SETTINGS = frozenset(
    {
        "concurrency",
        "seed",
        "on_no_effect",
        "stop",
        "stop_block",
        "looks",
        "reuse",
        "speculative",
        "noise_floor",
    }
)
"""Fields of `quality:` that are settings of every suite, not suites; every other field is a
suite registered in qgate/profile/suites.py (a unit test holds the two lists together)."""


class QualitySpec(Strict):
    """The quality suites; every configured suite gates the perf stage.

    A plug-in suite's setting sits beside the fields, under its own key
    (qgate/profile/extra_suites.py); any other key is refused as unknown."""

    model_config = ConfigDict(extra="allow")

    math: MathSuite | None = Field(default=None, description="Exact-answer math suite.")
    recall: RecallSuite | None = Field(default=None, description="Symbol recall suite.")
    divergence: DivergenceSuite | None = Field(
        default=None, description="Teacher-forced logit divergence suite."
    )
    lm_eval: list[LmEvalTask] = Field(
        default_factory=list, description="lm-eval tasks, each with its own gate policy."
    )
    tool_calls: ToolCallsSuite | None = Field(
        default=None, description="Tool-call suite: one exact expected call per item."
    )
    structured: StructuredSuite | None = Field(
        default=None, description="Structured-output suite: JSON constrained by a schema."
    )
    context_ladder: ContextLadder | None = Field(
        default=None,
        description="Recall items in context-length buckets up to the model's limit, each "
        "bucket gated on its own; the report names the first failing bucket (a cliff).",
    )
    degeneration: DegenerationSuite | None = Field(
        default=None, description="Long answers, alone and beside a prefill burst, kept clean."
    )
    sampling: SamplingSuite | None = Field(
        default=None, description="Canaries: each request parameter honoured as on the reference."
    )
    sampled: SampledSuite | None = Field(
        default=None,
        description="Math questions asked k times each at T > 0: sampled accuracy and the "
        "answers' diversity paired with the reference's (a distribution change, with stated "
        "power).",
    )
    concurrency: int = Field(default=8, ge=1, description="Requests in flight per suite.")
    seed: int = Field(default=0, description="Sampling seed sent with every request.")
    on_no_effect: Literal["warn", "fail"] = Field(
        default="warn",
        description="When every answer and every logprob of the candidate is bit-identical to "
        "the reference's (its change had no measurable effect: was it applied?): 'warn' in the "
        "report and on the console, or 'fail' the run (for CI).",
    )

    stop: Literal["off", "settled", "verdict", "looks"] = Field(
        default="off",
        description="Stop early, exactly: 'settled' ends an exact-answer suite (in blocks of "
        "`stop_block` items) once no outcome of its remaining items can change any of its "
        "gates' verdicts; 'verdict' also ends the whole quality stage once any gate has "
        "failed for every outcome of what is left (the run's FAIL is settled; gates it did not "
        "settle are shown as not settled). Never turns a FAIL into a PASS or back. 'looks': "
        "group-sequential: each exact-answer suite is asked in an order shuffled by `seed` and "
        "judged at `looks` evenly spaced looks with alpha split evenly over them (each look, "
        "the last included, at alpha / looks), and ends at the first look where its "
        "non-inferiority bounds show PASS or harm and its other gates are settled: a clearly "
        "fine or clearly broken candidate stops early, a doubtful one runs to the suite's "
        "size, its budget.",
    )
    looks: int = Field(
        default=3,
        ge=2,
        le=10,
        description="With stop 'looks': how many looks, evenly spaced over each suite's items "
        "(the last at all of them); every gate of the suite is judged at alpha / looks.",
    )
    stop_block: int | None = Field(
        default=None,
        ge=1,
        description="Items per block when stopping early (default: `concurrency`).",
    )

    reuse: ReuseSpec | None = Field(
        default=None,
        description="Ask the math and recall items again, served from the prefix cache, a "
        "restored host/external tier or under KV pressure, on both sides; gated against the "
        "reference's same pass and the candidate's own cold answers, with the server's counters "
        "as proof that the pass ran the path it names (docs/concepts/reuse.md).",
    )
    speculative: SpeculativeSpec | None = Field(
        default=None,
        description="Limits of the acceptance gate of a candidate whose engine arguments set "
        "`speculative_config` (the gate runs for such a candidate with these defaults when the "
        "block is absent): its acceptance length from the server's counters around the quality "
        "suites, against a floor or a share of a speculative reference's.",
    )

    noise_floor: NoiseFloor | None = Field(
        default=None,
        description="Measure the reference against itself first: it asks its math and recall "
        "items again at another concurrency in its own life (and re-scores its divergence "
        "continuations); the flip allowances the profile leaves unset are derived from how "
        "often it disagreed with itself, and a limit inside that floor is marked "
        "(docs/concepts/noise-floor.md).",
    )

    @model_validator(mode="wrap")
    @classmethod
    def _plugin_suites(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        if not isinstance(data, dict):
            return handler(data)
        block, extra = split_settings(cls.__name__, cls.model_fields, data, handler)
        if block.__pydantic_extra__ is not None:
            block.__pydantic_extra__.update(extra)
        return block  # type: ignore[no-any-return]

    @model_validator(mode="after")
    def _floor_batch(self) -> Self:
        floor = self.noise_floor
        if floor is not None and floor.second_concurrency(self.concurrency) == self.concurrency:
            raise KeyIssue(
                [
                    (
                        ("noise_floor", "concurrency"),
                        f"must differ from quality.concurrency ({self.concurrency}): the "
                        "second ask needs another batch",
                    )
                ]
            )
        return self

    @field_validator("stop", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        # YAML 1.1 reads a bare `off` as false: `stop: off` means what it says
        return "off" if value is False else value

    def has_suites(self) -> bool:
        """Whether any suite is configured (a profile needs one unless it is a preview)."""
        names = type(self).model_fields.keys() - NON_SUITE_SETTINGS
        return any(getattr(self, name) for name in names) or bool(self.model_extra)
