"""The item ids a suite's profile setting plans for one of its results, in the order the suite
asks them: what `qgate verify` holds each side's records to (qgate/report/verify/item_plan.py).

Named by the suites' registry entries (`SuiteEntry.item_ids`, qgate/profile/builtin_suites.py).
Each function takes the setting and the run it is held against (its result id, data digest and
parameters), and gives None where the ids cannot be derived here: a math set whose digest is not
the run's (the set file at hand differs, or is missing). Under `quality.stop: looks` a suite
that shuffles asks them in the seeded look order (qgate/quality/look_order.py) instead.
"""

from __future__ import annotations

from qgate.errors import BadInput
from qgate.profile import MathSuite, RecallSuite, StructuredSuite, ToolCallsSuite
from qgate.profile.sampled import SampledSuite
from qgate.quality.agent_data import structured_items, tool_items
from qgate.quality.data_recall import planted
from qgate.quality.math_set import math_data_sha256, math_items
from qgate.quality.records import SuiteRun
from qgate.quality.sampled_data import sampled_data_sha256, sampled_items
from qgate.quality.sizing import agent_items, recall_haystacks

__all__ = ["math_ids", "recall_ids", "sampled_ids", "structured_ids", "tool_call_ids"]


def math_ids(setting: MathSuite, run: SuiteRun) -> list[str] | None:
    """The math set's items (its limit or sized count, or the calibrated ladder draw), when
    the set at hand is the one the run's digest names."""
    budget = run.params.get("preamble_tokens_budget")
    try:
        # the budget the run used stands in for max_model_len, which the digest only clips by
        digest = math_data_sha256(
            setting,
            run.suite.partition(".")[2],
            max_model_len=None,
            long_tokens=budget if isinstance(budget, int) else None,
        )
        if digest != run.data_sha256:
            return None
        return [i.id for i in math_items(setting)]
    except BadInput:
        return None


def recall_ids(setting: RecallSuite, run: SuiteRun) -> list[str]:
    """Every haystack x depth (x similar-code count) planted at the run's length."""
    length = int(run.suite.partition(".")[2])
    return list(
        planted(
            setting.seed,
            length,
            recall_haystacks(setting),
            list(setting.depths),
            list(setting.similar),
        )
    )


def tool_call_ids(setting: ToolCallsSuite, run: SuiteRun) -> list[str]:
    """The generated tool-call items (the same for every tool choice, streamed or not)."""
    return [i.id for i in tool_items(agent_items(setting), setting.seed)]


def structured_ids(setting: StructuredSuite, run: SuiteRun) -> list[str]:
    """The generated structured-output items (the same for every parameter)."""
    return [i.id for i in structured_items(agent_items(setting), setting.seed)]


def sampled_ids(setting: SampledSuite, run: SuiteRun) -> list[str] | None:
    """The first `prompts` math questions, when the set at hand is the one the run's digest
    names."""
    try:
        if sampled_data_sha256(setting) != run.data_sha256:
            return None
        return [i.id for i in sampled_items(setting)]
    except BadInput:
        return None
