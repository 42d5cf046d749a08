"""The result ids of each built-in suite's configuration, with the policy that gates each."""

from __future__ import annotations

from collections.abc import Sequence

from qgate.profile.context_ladder import buckets
from qgate.profile.quality import (
    AccuracyPolicy,
    ContextLadder,
    LmEvalTask,
    MathSuite,
    RecallSuite,
    StructuredSuite,
    ToolCallsSuite,
)

__all__ = [
    "Results",
    "ladder_results",
    "lm_eval_results",
    "math_results",
    "recall_results",
    "structured_results",
    "tool_calls_results",
]

Results = list[tuple[str, AccuracyPolicy]]
"""Result ids ('math.short', 'lm_eval.gsm8k') with the accuracy policy that gates each."""


def math_results(spec: MathSuite) -> Results:
    return [(f"math.{form}", spec) for form in spec.prompts]


def recall_results(spec: RecallSuite) -> Results:
    return [(f"recall.{n}", spec) for n in spec.context_tokens]


def ladder_results(spec: ContextLadder) -> Results:
    return [(b.suite, spec) for b in buckets(spec.start, spec.up_to)]


def lm_eval_results(tasks: Sequence[LmEvalTask]) -> Results:
    return [(f"lm_eval.{task.task}", task) for task in tasks]


def tool_calls_results(spec: ToolCallsSuite) -> Results:
    return [(f"tool_calls.{choice}", spec) for choice in spec.choices]


def structured_results(spec: StructuredSuite) -> Results:
    return [(f"structured.{param}", spec) for param in spec.params]
