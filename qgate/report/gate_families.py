"""The gate families: what each measures, when it fails, and the keys that set it.

Rendered into docs/reference/gates.md by `make docs` (qgate/cli/docgen.py; the docgen test
fails when the page is stale). Each family names the pattern of its gate ids:
tests/unit/report/test_gate_families.py fails when a gate id of a committed example report or
of the toy suite has no family, so a new kind of gate cannot go unlisted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FAMILIES", "GateFamily", "family_of", "render"]


@dataclass(frozen=True)
class GateFamily:
    """One family of gates, as the catalogue shows it."""

    name: str
    ids: str
    """Its gate ids, in Markdown."""
    measures: str
    fails: str
    keys: str
    """The profile keys that set it, in Markdown."""
    pattern: str | None
    """Regular expression its gate ids match; None: it shares another family's ids."""


INTRO = """\
# Gate families

Every verdict in a report is one gate: an id (`math.long.max_drop`), the value it observed,
its limit, passed or not, and the reason in words. Gates are pure functions of the profile
and the records, so `qgate verify` recomputes each one from the signed data; a failed gate is
a result (exit 1), never an error. This page lists the families: what each measures, when it
fails, and the profile keys that set it. The keys themselves are in the
[profile reference](profile.md); how the paired tests are sized is in
[Gates and power](../concepts/gates-and-power.md).
"""

OUTRO = """\
Where a gate is decided early (`quality.stop`), its verdict says "settled at k of n items";
one that could still go either way is NOT SETTLED and never passes. A reuse pass or a
speculative gate that did not exercise its path is NOT EXERCISED and never passes.

Tool-call and structured-output results (`tool_calls.<choice>`, `structured.<param>`, and
each again streamed, `<result>.streamed`) are gated by the exact-answer gates above and their
`served` gate; the
report's warnings also count their failure kinds per side (a call left in `content`,
malformed arguments, a wrong name, an HTTP error, an unconstrained or truncated answer) and a
streamed result's streamed-only losses, see [Agent suites](../concepts/agent-suites.md).
The sampling canaries (`sampling`, one item per request parameter) are gated by
`sampling.max_flips` (0 by default), whose reason names each parameter the candidate
ignored, see [Sampling canaries](../concepts/sampling.md). The long-generation probe
(`degeneration.alone`, `degeneration.burst`) is gated like an exact-answer suite on the
answers the reference gave clean, see [Long generations](../concepts/long-generations.md).
"""

FAMILIES: tuple[GateFamily, ...] = (
    GateFamily(
        name="Exact answers",
        ids="`<result>.min_accuracy`, `.max_drop`, `.max_flips`, `.significance`, `.pairing`",
        measures=(
            "Paired outcomes of the same items on both sides (math, recall, lm-eval, tool calls, "
            "structured output, each context-ladder bucket)"
        ),
        fails=(
            "The candidate's accuracy is under the floor; its drop is over the limit; more items "
            "flipped from right to wrong than allowed; the one-sided exact McNemar test finds it "
            "worse at `alpha`; the two sides' items do not pair"
        ),
        keys=(
            "`quality.<suite>.min_accuracy`, `max_drop`, `max_flips`, `significance`, `alpha`, "
            "`power`, `detect`"
        ),
        pattern=r"\.(min_accuracy|max_drop|max_flips|significance|pairing)$",
    ),
    GateFamily(
        name="Fractional scores",
        ids="the same ids",
        measures="An lm-eval metric scored between 0 and 1 per item: the paired score differences",
        fails=(
            "As above, on mean scores and lowered items; a paired sign-flip permutation test "
            "replaces McNemar's"
        ),
        keys="the same keys, on `quality.lm_eval[]`",
        pattern=None,
    ),
    GateFamily(
        name="Divergence",
        ids=(
            "`divergence.max_mean_kld`, `.max_p99_kld`, `.max_max_kld`, `.min_top1_agreement`, "
            "`.max_mean_reverse_kld`"
        ),
        measures=(
            "KL divergence of the candidate's next-token distribution from the reference's on the "
            "reference's own tokens (teacher forcing), top-1 agreement"
        ),
        fails="A statistic is over its limit (under it, for agreement)",
        keys="`quality.divergence.*`",
        pattern=r"\.(max_mean_kld|max_p99_kld|max_max_kld|min_top1_agreement|max_mean_reverse_kld)$",
    ),
    GateFamily(
        name="Divergence cross-check",
        ids="`divergence.cross_check`",
        measures=(
            "A speculating candidate's (or, with `cross_check: always`, any candidate's) scores "
            "against its own greedy generation with top-k logprobs: each sequence's mean "
            "KL from its scores to its generation where both paths saw the same context"
        ),
        fails=(
            "Over `max_cross_kld`, or a sequence not generated again: NOT TRUSTED, and every "
            "divergence gate fails with it"
        ),
        keys="`quality.divergence.cross_check`, `max_cross_kld`",
        pattern=r"\.cross_check$",
    ),
    GateFamily(
        name="Constrained output",
        ids="`structured.<param>.constrained`",
        measures=(
            "Whether the server honoured the structured-output parameter (`response_format`, "
            "`structured_outputs` or the legacy `guided_json`), one gate each"
        ),
        fails=(
            "Outputs that ended on their own are not valid for their schema, or (quality "
            "derivation 8 on) outputs cut by max_tokens that no continuation makes valid (prose, "
            "a fence, a key the schema lacks): the parameter was ignored (named with the side; "
            "the result's accuracy gates fail as not scored)"
        ),
        keys="`quality.structured.params`",
        pattern=r"^structured\..+\.constrained$",
    ),
    GateFamily(
        name="Requests served",
        ids="`tool_calls.<choice>.served`, `structured.<param>.served` (and `<result>.streamed`)",
        measures=(
            "Whether the candidate served every agent request the reference served: items it "
            "answered with an HTTP error (a refused `tool_choice`, a rejected schema) where the "
            "reference answered"
        ),
        fails=(
            "Any such item (limit 0; named with the first error's text): graded as wrong items "
            "alone, refusals on items the reference had wrong too would cost no accuracy. Items "
            "both sides refused are named, not counted"
        ),
        keys="`quality.tool_calls.choices`, `quality.structured.params` (quality derivation 8 on)",
        pattern=r"^(tool_calls|structured)\..+\.served$",
    ),
    GateFamily(
        name="Reuse passes",
        ids="`<result>@<pass>.exercised`, `.self_flips`, and the suite's own gates per pass",
        measures=(
            "The items asked again warm, restored from a KV tier, or under load, paired with the "
            "reference's same pass"
        ),
        fails=(
            "The pass did not run the path it names (NOT EXERCISED: counters show too little reuse,"
            " no reset, no preemption); the candidate lost more cold-correct answers in the pass "
            "than the reference did"
        ),
        keys=(
            "`quality.reuse.passes`, `suites`, `min_exercised_share`, `max_extra_flips`, "
            "`load.min_preemptions`"
        ),
        pattern=r"^[^@]+@[a-z_]+\.[a-z_]+$",
    ),
    GateFamily(
        name="Speculative decoding",
        ids="`speculative.acceptance_length`, `speculative.counters`",
        measures=(
            "The candidate's mean accepted draft length over its quality stage; the counters' own "
            "arithmetic"
        ),
        fails=(
            "Acceptance under the floor or under its share of the reference's; too few drafts (NOT "
            "EXERCISED); counters that do not add up"
        ),
        keys="`quality.speculative.*`",
        pattern=r"^speculative\.",
    ),
    GateFamily(
        name="No effect",
        ids="`candidate.no_effect`",
        measures="Whether the candidate's answers and logprobs differ from the reference's at all",
        fails="Bit-identical: the change was probably never applied",
        keys="`quality.on_no_effect: fail`",
        pattern=r"^candidate\.no_effect$",
    ),
    GateFamily(
        name="KV-cache scales",
        ids="`<role>.kv_scales_calibrated`",
        measures=(
            "The engine's own start-up log: FP8 KV cache served with uncalibrated (1.0) scales"
        ),
        fails="The warning is present and the profile asks to fail on it",
        keys="`engine.uncalibrated_kv_scales: fail`",
        pattern=r"\.kv_scales_calibrated$",
    ),
    GateFamily(
        name="Changes applied",
        ids="`changes.<name>.applied`",
        measures=(
            "Each of the candidate's changes against what the running server reported (effective "
            "configuration, counters)"
        ),
        fails=(
            "The server's own record contradicts the change (unconfirmed changes are listed, not "
            "failed)"
        ),
        keys="the candidate's `args`, `env`, `engine`",
        pattern=r"^changes\..+\.applied$",
    ),
    GateFamily(
        name="Stream checks",
        ids="`perf.<scenario>.errors`, `perf.<scenario>.mismatches`",
        measures=(
            "Every measured request: errors, token counts against the requested lengths, early ends"
        ),
        fails="More than the allowed share of requests errored or did not match",
        keys="`perf.max_error_rate`",
        pattern=r"^perf\..+\.(errors|mismatches)$",
    ),
    GateFamily(
        name="Graded probes",
        ids="`perf.<scenario>.probes.max_flips`, `.significance`",
        measures=(
            "Math items asked inside each perf scenario, paired with the reference's answers at the"
            " same load"
        ),
        fails=(
            "The candidate lost more probe items than allowed, or McNemar finds it worse; its speed"
            " ratios are then withheld"
        ),
        keys="`perf.probes.*`",
        pattern=r"^perf\..+\.probes\.(max_flips|significance)$",
    ),
    GateFamily(
        name="Life probes",
        ids="`lives.<side>.<life>.start`, `.idle`",
        measures=(
            "Short math items every fresh server life of the candidate answers right after it is "
            "ready and again after an idle pause, against items the reference answered right in its"
            " quality stage and its own probes"
        ),
        fails=(
            "More than `max_flips` of a life's probe items lost: that life fails, named by side, "
            "round and node, and its perf figures leave the ratios; a life that judged no item is "
            "INCONCLUSIVE (perf derivation 11 on), and so is a life beside a broken reference "
            "life of its round and kind (12 on)"
        ),
        keys="`lives.probes`, `idle_s`, `max_flips`",
        pattern=r"^lives\.(?!reference\.)[^.]+\.\d+\.(start|idle)$",
    ),
    GateFamily(
        name="Reference lives",
        ids="`lives.reference.<life>.start`, `.idle`",
        measures=(
            "The reference's own lives' probes (perf derivation 12 on), on the items it answered "
            "right in its quality stage and, where it has several lives of a kind, another of "
            "them answered right too"
        ),
        fails=(
            "Never FAIL (the reference is not gated): a broken life (more than `max_flips` lost "
            "against its sibling lives, or none right) is INCONCLUSIVE, named by life, round and "
            "node; its round leaves the ratios and the candidate's lives of that round and kind "
            "are INCONCLUSIVE"
        ),
        keys="`lives.probes`, `idle_s`, `max_flips`",
        pattern=r"^lives\.reference\.\d+\.(start|idle)$",
    ),
    GateFamily(
        name="Pooled envelope",
        ids="`envelope.broken_rate`",
        measures=(
            "Every probe answer the candidate gave while serving (each perf scenario at every "
            "level, block and round, every life's start and idle probes) pooled: the one-sided "
            "exact (Clopper-Pearson) upper bound on the rate of broken answers"
        ),
        fails=(
            "The lower bound is above `max_broken` (harm shown); PASS only when the upper bound "
            "is within it, else INCONCLUSIVE"
        ),
        keys="`envelope.max_broken`, `alpha`",
        pattern=r"^envelope\.broken_rate$",
    ),
    GateFamily(
        name="Graded turns",
        ids="`perf.<scenario>.turns.max_flips`, `.significance`",
        measures=(
            "Graded turns of a multi-turn scenario's agent sessions (answers that depend on earlier"
            " turns: a code planted two turns back, a running total), paired per turn with the"
            " reference's same turns"
        ),
        fails=(
            "The candidate lost more turns than `max_flips` plus the reference's own flips, or"
            " McNemar finds it worse; the scenario's ratios are then withheld"
        ),
        keys="`perf.scenarios[].graded.*`",
        pattern=r"^perf\..+\.turns\.[a-z_]+$",
    ),
    GateFamily(
        name="Speed",
        ids="`perf.<scenario>.<metric>.min_ratio`, `.max_ratio`",
        measures="Candidate/reference ratios of a perf metric, with bootstrap 95% intervals",
        fails="The interval does not lie wholly on the right side of the limit",
        keys="`perf.gates[]`",
        pattern=r"^perf\..+\.(min_ratio|max_ratio)$",
    ),
)
"""In the order the catalogue lists them; `family_of` takes the first whose pattern matches."""


def family_of(gate: str) -> GateFamily | None:
    """The family of gate id `gate` ('recall.4096@warm.exercised' -> Reuse passes), or None."""
    order = sorted(FAMILIES, key=lambda f: f.name == "Exact answers")  # its suffixes last
    return next((f for f in order if f.pattern and re.search(f.pattern, gate)), None)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render() -> str:
    """The gate catalogue page (docs/reference/gates.md) below its generated notice."""
    rows = [
        f"| {f.name} | {_cell(f.ids)} | {_cell(f.measures)} | {_cell(f.fails)} | {_cell(f.keys)} |"
        for f in FAMILIES
    ]
    table = [
        "| Family | Gate ids | Measures | Fails when | Keys |",
        "| --- | --- | --- | --- | --- |",
    ]
    return "\n".join([INTRO, *table, *rows, "", OUTRO]).rstrip() + "\n"
