"""The built-in suites' registry entries, in the order they run: imported by
qgate/profile/suites.py before the plug-ins of the `qgate.suites` entry-point group
(qgate/profile/suite_entry.py holds the registry)."""

from __future__ import annotations

from qgate.profile.quality import (
    ContextLadder,
    DegenerationSuite,
    DivergenceSuite,
    LmEvalTask,
    MathSuite,
    RecallSuite,
    SampledSuite,
    SamplingSuite,
    StructuredSuite,
    ToolCallsSuite,
)
from qgate.profile.suite_checks import ladder_problems, lm_eval_problems, tool_calls_args
from qgate.profile.suite_entry import ACCURACY_GATE_FIELDS, SuiteEntry, register
from qgate.profile.suite_results import (
    degeneration_results,
    ladder_results,
    lm_eval_results,
    math_results,
    recall_results,
    structured_results,
    tool_calls_results,
)

register(
    SuiteEntry(
        key="math",
        model=MathSuite,
        runner="qgate.quality.math_suite:SUITE",
        planned="qgate.quality.plans:math_plan",
        rederive="qgate.report.verify.rederive:rederive_math",
        check_items="qgate.report.verify.rederive:check_math_items",
        item_ids="qgate.quality.item_ids:math_ids",
        results=math_results,
        asked_again="qgate.quality.asked_again:MATH_AGAIN",
        localise="qgate.report.localise:MATH",
        uses=frozenset({"tokenize"}),  # the long form's preamble; sized by characters without
        shuffles=True,
    )
)
register(
    SuiteEntry(
        key="recall",
        model=RecallSuite,
        runner="qgate.quality.recall_suite:SUITE",
        planned="qgate.quality.plans:recall_plan",
        rederive="qgate.report.verify.rederive:rederive_symbol",
        check_items="qgate.report.verify.rederive:check_recall_runs",
        item_ids="qgate.quality.item_ids:recall_ids",
        results=recall_results,
        asked_again="qgate.quality.asked_again:RECALL_AGAIN",
        localise="qgate.report.localise:RECALL",
        uses=frozenset({"tokenize"}),  # haystack sizes; estimated from characters without
    )
)
register(
    SuiteEntry(
        key="divergence",
        model=DivergenceSuite,
        runner="qgate.quality.divergence_suite:SUITE",
        planned="qgate.quality.plans:divergence_plan",
        gate_fields=frozenset(
            {
                "max_mean_kld",
                "max_p99_kld",
                "max_max_kld",
                "min_top1_agreement",
                "max_mean_reverse_kld",
            }
        ),
        # /tokenize for the prompt ids, forced continuation lengths, teacher-forced top-k
        needs=frozenset({"prompt_logprobs", "tokenize", "min_tokens"}),
        paired=True,
        localise="qgate.report.localise:DIVERGENCE",
    )
)
register(
    SuiteEntry(
        key="lm_eval",
        model=LmEvalTask,
        runner="qgate.quality.lmeval_suite:SUITE",
        planned="qgate.quality.plans:lm_eval_plan",
        rederive="qgate.report.verify.rederive_lm_eval:rederive_lm_eval",
        check_items="qgate.report.verify.rederive_lm_eval:check_lm_eval_items",
        results=lm_eval_results,
        problems=lm_eval_problems,
    )
)
register(
    SuiteEntry(
        key="tool_calls",
        model=ToolCallsSuite,
        runner="qgate.quality.agent_suites:TOOL_CALLS",
        planned="qgate.quality.plans:tool_calls_plan",
        rederive="qgate.report.verify.rederive:rederive_tool_calls",
        check_items="qgate.report.verify.rederive:check_tool_call_items",
        item_ids="qgate.quality.item_ids:tool_call_ids",
        results=tool_calls_results,
        engine_args=tool_calls_args,
    )
)
register(
    SuiteEntry(
        key="structured",
        model=StructuredSuite,
        runner="qgate.quality.agent_suites:STRUCTURED",
        planned="qgate.quality.plans:structured_plan",
        rederive="qgate.report.verify.rederive:rederive_structured",
        check_items="qgate.report.verify.rederive:check_structured_items",
        item_ids="qgate.quality.item_ids:structured_ids",
        results=structured_results,
    )
)
register(
    SuiteEntry(
        key="degeneration",
        model=DegenerationSuite,
        runner="qgate.quality.degeneration_suite:SUITE",
        planned="qgate.quality.plans:degeneration_plan",
        rederive="qgate.report.verify.rederive_degeneration:rederive_degeneration",
        check_items="qgate.report.verify.rederive_degeneration:check_degeneration_items",
        results=degeneration_results,
    )
)
register(
    SuiteEntry(
        key="sampling",
        model=SamplingSuite,
        runner="qgate.quality.sampling_suite:SUITE",
        planned="qgate.quality.plans:sampling_plan",
        rederive="qgate.report.verify.rederive_sampling:rederive_sampling",
        check_items="qgate.report.verify.rederive_sampling:check_sampling_items",
    )
)
register(
    SuiteEntry(
        key="sampled",
        model=SampledSuite,
        runner="qgate.quality.sampled_suite:SUITE",
        planned="qgate.quality.plans:sampled_plan",
        rederive="qgate.report.verify.rederive_sampled:rederive_sampled",
        check_items="qgate.report.verify.rederive_sampled:check_sampled_items",
        item_ids="qgate.quality.item_ids:sampled_ids",
        gate_fields=ACCURACY_GATE_FIELDS | frozenset({"max_diversity_change"}),
    )
)
# the longest prompts last (issue 44 item 3)
register(
    SuiteEntry(
        key="context_ladder",
        model=ContextLadder,
        runner="qgate.quality.context_ladder_suite:SUITE",
        rederive="qgate.report.verify.rederive:rederive_symbol",
        check_items="qgate.report.verify.rederive:check_ladder_runs",
        results=ladder_results,
        problems=ladder_problems,
        planned="qgate.quality.plans:context_ladder_plan",
        family="context",
        gate_fields=ACCURACY_GATE_FIELDS
        | frozenset({"max_mean_kld", "max_max_kld", "min_top1_agreement"}),
        uses=frozenset({"tokenize"}),  # haystack sizes; estimated from characters without
    )
)
