"""The result ids of each built-in suite's configuration, with the policy that gates each."""

from __future__ import annotations

from collections.abc import Sequence

from qgate.profile.context_ladder import buckets
from qgate.profile.degeneration import DegenerationSuite
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
    "STREAMED",
    "Results",
    "agent_ways",
    "degeneration_results",
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


STREAMED = ".streamed"
"""The tail of an agent result asked streamed ('tool_calls.named.streamed')."""


def agent_ways(family: str, ways: Sequence[str], streamed: bool) -> list[tuple[str, str, bool]]:
    """(result id, way, streamed) of an agent suite: each way of asking (a tool choice, a
    schema parameter) as is and, where `streamed`, streamed right after it."""
    twice = (False, True) if streamed else (False,)
    return [(f"{family}.{w}" + (STREAMED if s else ""), w, s) for w in ways for s in twice]


def tool_calls_results(spec: ToolCallsSuite) -> Results:
    return [(rid, spec) for rid, _, _ in agent_ways("tool_calls", spec.choices, spec.streamed)]


def structured_results(spec: StructuredSuite) -> Results:
    return [(rid, spec) for rid, _, _ in agent_ways("structured", spec.params, spec.streamed)]


def degeneration_results(spec: DegenerationSuite) -> Results:
    results: Results = [("degeneration.alone", spec)]
    return results + ([("degeneration.burst", spec)] if spec.burst else [])
