"""Each suite's rows of the run plan: its result ids, the items each asks a side, what an item is.

Named by the suites' registry entries (`SuiteEntry.planned`, qgate/profile/suites.py) and
read by `qgate plan` and the plan's stated power (qgate/run/plan.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from qgate.core.plan import SuitePlan
from qgate.profile.degeneration import DegenerationSuite
from qgate.profile.quality import (
    ContextLadder,
    DivergenceSuite,
    LmEvalTask,
    MathSuite,
    RecallSuite,
    StructuredSuite,
    ToolCallsSuite,
)
from qgate.profile.sampled import SampledSuite
from qgate.profile.sampling import SamplingSuite
from qgate.profile.suite_results import agent_ways
from qgate.quality.calibrate import math_draw
from qgate.quality.math_set import math_items
from qgate.quality.sampled_power import power_line
from qgate.quality.sampling_data import canary
from qgate.quality.sizing import (
    agent_items,
    ladder_plan,
    lmeval_limit,
    recall_cells,
    recall_haystacks,
)

__all__ = [
    "context_ladder_plan",
    "divergence_plan",
    "lm_eval_plan",
    "math_plan",
    "recall_plan",
    "degeneration_plan",
    "sampled_plan",
    "sampling_plan",
    "structured_plan",
    "tool_calls_plan",
]


def math_plan(setting: MathSuite) -> list[SuitePlan]:
    """One row per prompt form, each asking the whole set."""
    count = len(math_items(setting))
    draw = math_draw(setting)
    return [
        SuitePlan(suite=f"math.{f}", items=count, detail="exact-answer questions", draw=draw)
        for f in setting.prompts
    ]


def recall_plan(setting: RecallSuite) -> list[SuitePlan]:
    """One row per context length: its haystacks times their planted depths."""
    count = recall_haystacks(setting) * recall_cells(setting)
    return [
        SuitePlan(suite=f"recall.{n}", items=count, detail=f"{n}-token haystacks")
        for n in setting.context_tokens
    ]


def divergence_plan(setting: DivergenceSuite) -> list[SuitePlan]:
    """The one divergence row: its sequences."""
    detail = f"sequences of {setting.tokens} scored tokens"
    return [SuitePlan(suite="divergence", items=setting.sequences, detail=detail)]


def lm_eval_plan(setting: Sequence[LmEvalTask]) -> list[SuitePlan]:
    """One row per task (items unknown where the task's size is lm-eval's)."""
    return [
        SuitePlan(suite=f"lm_eval.{t.task}", items=lmeval_limit(t), detail="lm-eval documents")
        for t in setting
    ]


def tool_calls_plan(setting: ToolCallsSuite) -> list[SuitePlan]:
    """One row per tool choice, and per choice streamed where the setting streams."""
    n = agent_items(setting)
    return [
        SuitePlan(suite=rid, items=n, detail="tool calls asked" + (", streamed" if s else ""))
        for rid, _, s in agent_ways("tool_calls", setting.choices, setting.streamed)
    ]


def structured_plan(setting: StructuredSuite) -> list[SuitePlan]:
    """One row per constraint parameter, and per parameter streamed where the setting streams."""
    n = agent_items(setting)
    what = "schema-constrained answers"
    return [
        SuitePlan(suite=rid, items=n, detail=what + (", streamed" if s else ""))
        for rid, _, s in agent_ways("structured", setting.params, setting.streamed)
    ]


def degeneration_plan(setting: DegenerationSuite) -> list[SuitePlan]:
    """A row per result: the long prompts, and what each may generate."""
    what = f"answers of up to {setting.max_tokens} tokens"
    burst = f"{what}, beside prefill-only requests of ~{setting.burst_words} tokens"
    return [SuitePlan(suite="degeneration.alone", items=setting.items, detail=what)] + (
        [SuitePlan(suite="degeneration.burst", items=setting.items, detail=burst)]
        if setting.burst
        else []
    )


def sampling_plan(setting: SamplingSuite) -> list[SuitePlan]:
    """The one canaries row: a canary per parameter, and the requests they ask."""
    asked = sum(len(canary(p, setting.max_tokens, setting.samples).bodies) for p in setting.params)
    detail = f"sampling canaries ({asked} requests, one at a time)"
    return [SuitePlan(suite="sampling", items=len(setting.params), detail=detail, requests=asked)]


def sampled_plan(setting: SampledSuite) -> list[SuitePlan]:
    """The one sampled row: its questions, the requests they ask each side, its stated power."""
    asked = setting.prompts * setting.samples
    detail = (
        f"math questions x {setting.samples} samples at T={setting.temperature:g}: {asked} "
        f"requests per side, {2 * asked} in all; {power_line(setting)}"
    )
    return [SuitePlan(suite="sampled", items=setting.prompts, detail=detail, requests=asked)]


def context_ladder_plan(setting: ContextLadder) -> list[SuitePlan]:
    """One row per ladder bucket."""
    return [SuitePlan(suite=rid, items=n, detail=what) for rid, n, what in ladder_plan(setting)]
